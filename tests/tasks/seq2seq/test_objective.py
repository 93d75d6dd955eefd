"""Seq2SeqObjective: label-smoothed loss by hand, decoded metrics against every reference, the config builder, and
tiny models that learn the dates data set through ``fit`` (and come back from their checkpoint)."""

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnkit.checkpointing import load_model_weights, read_config
from attnkit.data.seq2seq import (
    EOS_ID,
    PairDataset,
    Vocab,
    build_tokenizers,
    collate_pairs,
    encode_pairs,
    load_data_set,
    make_loader,
)
from attnkit.models.rnn_seq2seq import RNNSeq2Seq
from attnkit.models.seq2seq import build_seq2seq, seq2seq_options
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq
from attnkit.tasks.seq2seq.inference import translate_texts
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective, label_smoothed_loss
from attnkit.tasks.seq2seq.scoring import SEQUENCE, TEXT, scoring_for, scoring_named
from attnkit.training.loop import FitConfig, fit

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def test_label_smoothed_loss_matches_a_hand_computation():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    targets = torch.tensor([[3, 4, 2], [2, 0, 0]])  # 0 = padding
    eps = 0.2
    log_p = logits.log_softmax(-1)
    per_token = [
        (1 - eps) * -log_p[b, t, targets[b, t]] + eps * -log_p[b, t].mean()
        for b in range(2)
        for t in range(3)
        if targets[b, t] != 0
    ]
    expected = torch.stack(per_token).mean()
    torch.testing.assert_close(label_smoothed_loss(logits, targets, smoothing=eps), expected)
    garbage = logits.clone()
    garbage[1, 1:] = 1e3 * torch.randn(2, 5)  # logits at padded positions never count
    torch.testing.assert_close(label_smoothed_loss(garbage, targets, smoothing=eps), expected)
    with pytest.raises(ValueError, match="smoothing must lie in"):
        label_smoothed_loss(logits, targets, smoothing=1.0)
    with pytest.raises(ValueError, match=r"logits \[B, T, V\]"):
        label_smoothed_loss(logits, targets[:, :2])


class Echo(nn.Module):
    """Copies its source: all mass on source token ``t`` at step ``t``, then ``<eos>``. A StepwiseSeq2Seq."""

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.bias = nn.Parameter(torch.zeros(vocab_size))

    def _logits(self, source_ids, source_mask, positions):  # positions [N, T]
        lengths = source_mask.sum(1, keepdim=True)
        tokens = source_ids.gather(1, positions.clamp(max=source_ids.shape[1] - 1))
        tokens = torch.where(positions >= lengths, EOS_ID, tokens)
        return 20.0 * F.one_hot(tokens, self.vocab_size).float() + self.bias  # [N, T, V]

    def forward(self, source_ids, source_mask, target_in):
        positions = torch.arange(target_in.shape[1]).expand(target_in.shape)
        return SimpleNamespace(logits=self._logits(source_ids, source_mask, positions))

    def start_decoding(self, source_ids, source_mask, *, beams=1, max_steps):
        rows = lambda x: x.repeat_interleave(beams, 0)  # noqa: E731
        return {"ids": rows(source_ids), "mask": rows(source_mask), "t": 0}

    def decode_step(self, tokens, state, *, need_weights=False):
        positions = torch.full((tokens.shape[0], 1), state["t"])
        state["t"] += 1
        return self._logits(state["ids"], state["mask"], positions)[:, 0], None

    def reorder_state(self, state, indices):
        pass  # rows of one source are identical


def echo_dataset(pairs, vocab):
    return PairDataset(vocab.encode_batch([s for s, _ in pairs]), vocab.encode_batch([t for _, t in pairs]))


@pytest.mark.parametrize("beam_size", [1, 3])
def test_evaluate_scores_decoded_text_against_every_reference_by_dataset_index(beam_size):
    pairs = [("2001-01-01", "2001-01-01"), ("abc", "abd"), ("hello world", "hello word"), ("xyz", "xyz!")]
    vocab = Vocab.build([s + t for s, t in pairs], level="char")
    references = [[t] for _, t in pairs]
    references[1].append("abc")  # a second acceptable answer: the echo is right
    objective = Seq2SeqObjective(Echo(vocab.vocab_size), vocab, references=references, beam_size=beam_size)
    assert (objective.select_metric, objective.select_mode) == ("wer", "min")
    loader = make_loader(echo_dataset(pairs, vocab), batch_size=3, shuffle=False)  # sorted by length: reordered
    metrics = objective.evaluate(loader)
    assert metrics["wer"] == 50.0 and metrics["exact_match"] == 50.0  # "hello world" and "xyz" are wrong
    # per: character edits over the closest references' characters: 0 + 0 + 1 ("l" extra) + 1 ("!" missing)
    assert math.isclose(metrics["per"], 100.0 * 2 / (10 + 3 + 10 + 4))
    assert 0.0 < metrics["token_accuracy"] < 100.0 and metrics["loss"] > 0.0
    own = objective.evaluate(loader, references=[[t] for _, t in pairs])  # without the alternative: 3 wrong
    assert own["wer"] == 75.0


def test_text_metrics_and_the_selection_metric():
    pairs = [("the cat sat on the mat", "the cat sat on the mat"), ("a dog", "a dog")]
    vocab = Vocab.build([s for s, _ in pairs], level="symbol")
    objective = Seq2SeqObjective(Echo(vocab.vocab_size), vocab, scoring=TEXT)
    assert (objective.select_metric, objective.select_mode) == ("bleu", "max")
    metrics = objective.evaluate(make_loader(echo_dataset(pairs, vocab), batch_size=2, shuffle=False))
    assert metrics["bleu"] == pytest.approx(100.0) and metrics["chrf"] == pytest.approx(100.0)
    assert objective.score(["the dog sat"], [["the cat sat on the mat"]])["bleu"] < 50.0
    assert scoring_for(SimpleNamespace(target_level="subword")) is TEXT
    assert scoring_for(SimpleNamespace(target_level="symbol")) is SEQUENCE
    with pytest.raises(ValueError, match="metrics must be one of"):
        scoring_named("accuracy")


def test_build_seq2seq_from_a_config_and_its_errors():
    rnn = build_seq2seq({"model": "rnn", "source_vocab_size": 9, "target_vocab_size": 7, "attention": "bahdanau"})
    assert isinstance(rnn, RNNSeq2Seq) and rnn.output.out_features == 7
    transformer = build_seq2seq(
        {"model": "transformer", "source_vocab_size": 9, "target_vocab_size": 9, "dim": 16, "share_embeddings": True}
    )
    assert isinstance(transformer, TransformerSeq2Seq)
    assert seq2seq_options("rnn")["attention"] == "luong-general"
    with pytest.raises(ValueError, match="unknown rnn seq2seq option"):
        build_seq2seq({"model": "rnn", "source_vocab_size": 9, "target_vocab_size": 7, "hidden": 3})
    with pytest.raises(ValueError, match="config needs a 'model' key"):
        build_seq2seq({"source_vocab_size": 9})
    with pytest.raises(ValueError, match="must be one of rnn, transformer"):
        build_seq2seq({"model": "gpt"})
    with pytest.raises(ValueError, match="missing source_vocab_size, target_vocab_size"):
        build_seq2seq({"model": "transformer"})


@pytest.fixture(scope="module")
def dates():
    data = load_data_set("dates", train_size=1200, valid_size=200, test_size=0)
    source_tok, target_tok = build_tokenizers(data)
    return data, source_tok, target_tok, encode_pairs(data.train, source_tok, target_tok)


MODEL_CONFIGS = {
    # (config, lr, epochs, least exact-match %, highest PER %); measured: rnn 92.5 / 1.0, transformer 28.5 / 14.4
    "rnn": (
        {"model": "rnn", "attention": "luong-general", "cell": "lstm", "embed_dim": 32, "hidden_dim": 64},
        3e-3,
        5,
        50,
        10,
    ),
    "transformer": (
        {"model": "transformer", "dim": 64, "heads": 4, "encoder_layers": 2, "decoder_layers": 2, "ff_dim": 128},
        2e-3,
        6,
        10,
        30,
    ),
}


@pytest.mark.parametrize("family", MODEL_CONFIGS)
def test_a_tiny_model_learns_dates_through_fit_and_reloads_from_its_checkpoint(family, dates, tmp_path):
    """~200 steps on 1,200 dates: exact matches go from 0 to well above chance (which is ~0 for 10 characters)."""
    data, source_tok, target_tok, train = dates
    options, lr, epochs, least_exact, most_per = MODEL_CONFIGS[family]
    config = {
        **options,
        "source_vocab_size": source_tok.vocab_size,
        "target_vocab_size": target_tok.vocab_size,
        "dropout": 0.0,
    }
    torch.manual_seed(0)
    model = build_seq2seq(config)
    references = data.references_for("valid")
    objective = Seq2SeqObjective(model, target_tok, references=references, label_smoothing=0.0)
    valid = make_loader(encode_pairs(data.valid, source_tok, target_tok), batch_size=100, shuffle=False)
    before = objective.evaluate(valid)
    assert before["exact_match"] == 0.0 and before["per"] > 50.0
    loader = make_loader(train, batch_size=32, seed=0)

    def train_batches(epoch):
        loader.batch_sampler.set_epoch(epoch)
        return loader

    settings = FitConfig(epochs=epochs, lr=lr, select_metric=objective.select_metric, select_mode=objective.select_mode)
    settings.progress, settings.patience = False, None
    result = fit(objective, train_batches, lambda: valid, settings, checkpoint_dir=tmp_path, model_config=config)
    after = objective.evaluate(valid)
    assert after["exact_match"] >= least_exact and after["per"] <= most_per, (before, after)
    assert after["wer"] == pytest.approx(result.best_metrics["wer"])
    # the checkpoint rebuilds the same model: same decoded outputs
    reloaded = build_seq2seq(read_config(tmp_path / "best"))
    load_model_weights(reloaded, tmp_path / "best")
    again = Seq2SeqObjective(reloaded, target_tok, references=references).evaluate(valid)
    assert again["wer"] == after["wer"] and again["per"] == after["per"]
    translations = translate_texts(model, source_tok, target_tok, [s for s, _ in data.valid[:5]], need_weights=True)
    assert [t.source for t in translations] == [s for s, _ in data.valid[:5]]
    for t in translations:
        generated = len(target_tok.encode(t.text))
        assert t.attention.shape[0] in (generated, generated + 1)  # + <eos> unless cut at max_len
        assert t.attention.shape[-1] == len(source_tok.encode(t.source))  # trimmed to the source's own tokens
        torch.testing.assert_close(t.attention.sum(-1), torch.ones(t.attention.shape[:-1]))


def test_task_loss_is_the_smoothed_loss_of_the_models_logits():
    torch.manual_seed(0)
    vocab = Vocab.build(["abcdef"], level="char")
    model = build_seq2seq(
        {"model": "transformer", "source_vocab_size": len(vocab), "target_vocab_size": len(vocab), "dim": 16}
    ).eval()
    batch = collate_pairs([(vocab.encode("abc"), vocab.encode("fed")), (vocab.encode("a"), vocab.encode("bcdef"))])
    objective = Seq2SeqObjective(model, vocab, label_smoothing=0.1)
    expected = label_smoothed_loss(model(batch.source_ids, batch.source_mask, batch.target_in).logits, batch.target_out)
    torch.testing.assert_close(objective.loss(batch), expected)
    with pytest.raises(ValueError, match="the batch has no targets"):
        objective.loss(collate_pairs([(vocab.encode("abc"), None)]))
