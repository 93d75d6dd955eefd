"""Export to CTranslate2: a trained dates Transformer decodes the same tokens in both backends (greedy, beam 4,
n-best), every supported architecture scores a target as attnkit does, and tampered or incomplete exports are refused.

The model is trained here for 150 small steps (a few seconds on one thread): its outputs are real dates that end with
``<eos>``, so token equality means something (random weights give near-ties and hypotheses cut at ``max_len``).
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("ctranslate2", reason="ctranslate2 is not installed (pip install 'attnkit[deploy]')")

from _near_ties import assert_equal_but_near_ties
from attnkit.data.seq2seq import (
    PAD_ID,
    Vocab,
    build_tokenizers,
    collate_pairs,
    encode_pairs,
    load_data_set,
    make_loader,
)
from attnkit.decoding import beam_search, greedy
from attnkit.models.rnn_seq2seq import build_rnn_seq2seq
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq, build_transformer_seq2seq
from attnkit.tasks.seq2seq.ctranslate2.export import (
    MANIFEST_FILE,
    ExportError,
    export_ctranslate2,
    load_ctranslate2,
    verify_export,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread

NEAR_TIES = 1  # items whose decoding two runtimes' float32 kernels may part on another CPU (tests/_near_ties.py)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small Transformer trained on dates (150 steps), its tokenisers, 64 held-out sources, its float32 export
    and the 64 reference dates."""
    threads = torch.get_num_threads()  # module fixtures start before the function-scoped one_thread
    torch.set_num_threads(1)
    data = load_data_set("dates", train_size=1500, valid_size=64, test_size=0)
    source_tok, target_tok = build_tokenizers(data)
    torch.manual_seed(0)
    model = TransformerSeq2Seq(
        source_tok.vocab_size, target_tok.vocab_size, dim=32, heads=4, encoder_layers=1, decoder_layers=1,
        ff_dim=64, dropout=0.0,
    )  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=6e-3)
    loader = make_loader(encode_pairs(data.train, source_tok, target_tok), batch_size=32, seed=0)

    def batches():
        for epoch in itertools.count():
            loader.batch_sampler.set_epoch(epoch)
            yield from loader

    for batch in itertools.islice(batches(), 150):
        logits = model(batch.source_ids, batch.source_mask, batch.target_in).logits  # [B, T, V]
        loss = F.cross_entropy(logits.transpose(1, 2), batch.target_out, ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    out = export_ctranslate2(model, source_tok, target_tok, tmp_path_factory.mktemp("ct2") / "dates")
    torch.set_num_threads(threads)
    return model, source_tok, target_tok, [s for s, _ in data.valid], out, [t for _, t in data.valid]


def _native(model, source_tok, texts, beam_size):
    """attnkit's own decoding of ``texts`` as one batch: ``[[(token ids, score)] per hypothesis] per text``."""
    batch = collate_pairs([(ids, None) for ids in source_tok.encode_batch(texts)])
    if beam_size == 1:
        out = greedy(model, batch.source_ids, batch.source_mask)
    else:
        out = beam_search(model, batch.source_ids, batch.source_mask, beam_size=beam_size)
    return [
        [(out.tokens[i, k, : out.lengths[i, k]].tolist(), float(out.scores[i, k])) for k in range(out.tokens.shape[1])]
        for i in range(len(texts))
    ]


@pytest.mark.parametrize("beam_size", [1, 4])
def test_a_trained_model_decodes_the_same_tokens_in_both_backends(trained, beam_size):
    model, source_tok, target_tok, texts, export, _ = trained
    translator = load_ctranslate2(export, threads=1)
    native = _native(model, source_tok, texts, beam_size)
    ours = translator.translate(texts, beam_size=beam_size)
    assert len(ours) == len(texts) and all(len(hyps) == 1 for hyps in ours)
    # two runtimes' float32 kernels: the same tokens but where a near tie may go the other way on another CPU
    parted = assert_equal_but_near_ties(
        [h[0].token_ids for h in ours], [n[0][0] for n in native], allowed=NEAR_TIES, what="decoded tokens"
    )
    assert all(h[0].finished and h[0].token_ids[-1] == target_tok.eos_id for h in ours)
    for row, (hyps, native_hyps) in enumerate(zip(ours, native, strict=True)):
        if row not in parted:
            assert hyps[0].text == target_tok.decode(native_hyps[0][0])
            assert hyps[0].score == pytest.approx(native_hyps[0][1], abs=1e-4)
    assert [h[0].text[:2] for h in ours].count("19") + [h[0].text[:2] for h in ours].count("20") >= 60  # real years


def test_n_best_lists_are_sorted_by_score_and_match_attnkits_beam(trained):
    model, source_tok, _, texts, export, _ = trained
    translator = load_ctranslate2(export, threads=1)
    ours = translator.translate(texts[:16], beam_size=4, num_hypotheses=3)
    native = _native(model, source_tok, texts[:16], 4)
    lists = [[h.token_ids for h in hyps] for hyps in ours]
    parted = assert_equal_but_near_ties(
        lists, [[ids for ids, _ in n[:3]] for n in native], allowed=NEAR_TIES, what="n-best"
    )
    for row, (hyps, native_hyps) in enumerate(zip(ours, native, strict=True)):
        scores = [h.score for h in hyps]
        assert len(hyps) == 3 and scores == sorted(scores, reverse=True)
        if row not in parted:
            assert scores == pytest.approx([score for _, score in native_hyps[:3]], abs=1e-4)
    # length_penalty = 0 ranks by raw log-probability: both backends agree on the best hypothesis there too
    raw = translator.translate(texts[:16], beam_size=4, length_penalty=0.0)
    batch = collate_pairs([(ids, None) for ids in source_tok.encode_batch(texts[:16])])
    out = beam_search(model, batch.source_ids, batch.source_mask, beam_size=4, length_penalty=0.0)
    native_best = [out.tokens[i, 0, : out.lengths[i, 0]].tolist() for i in range(16)]
    assert_equal_but_near_ties([h[0].token_ids for h in raw], native_best, allowed=NEAR_TIES, what="raw beams")


def test_an_int8_export_is_smaller_and_as_accurate(trained, tmp_path):
    """int8 changes tokens where the weak model hesitates, so judge it on accuracy against the reference dates."""
    model, source_tok, target_tok, texts, _, references = trained
    int8 = export_ctranslate2(model, source_tok, target_tok, tmp_path / "int8", quantization="int8", max_positions=64)
    float32 = export_ctranslate2(model, source_tok, target_tok, tmp_path / "float32", max_positions=64)
    assert (int8 / "model.bin").stat().st_size < 0.5 * (float32 / "model.bin").stat().st_size  # 1 byte a weight, not 4
    assert verify_export(int8)["quantization"] == "int8"

    def char_accuracy(directory):
        outputs = [h[0].text for h in load_ctranslate2(directory, threads=1).translate(texts)]
        right = sum(
            a == b for out, ref in zip(outputs, references, strict=True) for a, b in zip(out, ref, strict=False)
        )
        return right / sum(map(len, references))

    native, quantised = char_accuracy(float32), char_accuracy(int8)
    assert native > 0.4 and quantised >= native - 0.05, (native, quantised)  # measured: 0.61 and 0.63


def _random_model(vocab: int, **options) -> TransformerSeq2Seq:
    torch.manual_seed(1)
    layers = {"encoder_layers": 2, "decoder_layers": 2, **options}
    return build_transformer_seq2seq(vocab, vocab, dim=32, heads=4, ff_dim=48, dropout=0.0, **layers).eval()


VARIANTS = {
    "pre-norm sinusoidal, tied": {},
    "post-norm": {"norm_first": False},
    "learned positions": {"positions": "learned", "max_len": 40},
    "rotary positions": {"positions": "rotary"},
    "no encoder layers (identity layer)": {"encoder_layers": 0},
    "shared embeddings, untied output": {"share_embeddings": True, "tie_output": False},
    "relu feed-forward": {},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_supported_architecture_scores_a_target_as_attnkit_does(variant, tmp_path):
    """Reference: attnkit's teacher-forced log-probabilities of each target token (``<eos>`` included)."""
    vocab = Vocab([chr(c) for c in range(ord("a"), ord("a") + 20)], level="char")
    model = _random_model(vocab.vocab_size, **VARIANTS[variant])
    if variant == "relu feed-forward":
        for layer in [*model.encoder_layers, *model.decoder_layers]:
            layer.feed_forward[1] = torch.nn.ReLU()
    export = export_ctranslate2(model, vocab, vocab, tmp_path / "m")
    translator = load_ctranslate2(export, threads=1)
    sources = [[5, 6, 7, 8, 9], [10, 11], [4] * 9]
    targets = [[12, 13, 14, 2], [7, 2], [20, 21, 22, 23, 2]]
    scored = translator.translator.score_batch(
        [[vocab.id_to_token(i) for i in s] for s in sources], [[vocab.id_to_token(i) for i in t[:-1]] for t in targets]
    )
    batch = collate_pairs([(s, t[:-1]) for s, t in zip(sources, targets, strict=True)])
    with torch.no_grad():
        log_probs = model(batch.source_ids, batch.source_mask, batch.target_in).logits.log_softmax(-1)  # [B, T, V]
    for row, target in enumerate(targets):
        expected = log_probs[row, torch.arange(len(target)), torch.tensor(target)]
        torch.testing.assert_close(torch.tensor(scored[row].log_probs), expected, atol=1e-4, rtol=1e-4)
    native = greedy(model, batch.source_ids, batch.source_mask, max_len=12)
    ours = translator.translate_ids(sources, max_len=12)
    native_ids = [native.tokens[i, 0, : native.lengths[i, 0]].tolist() for i in range(3)]
    assert_equal_but_near_ties([h[0].token_ids for h in ours], native_ids, allowed=NEAR_TIES, what="greedy tokens")


def test_unsupported_models_and_arguments_are_refused_in_one_line(tmp_path):
    vocab = Vocab(list("abcdef"), level="char")
    rnn = build_rnn_seq2seq(source_vocab_size=vocab.vocab_size, target_vocab_size=vocab.vocab_size)
    with pytest.raises(ValueError, match=r"^export supports Transformer models \(got an RNN seq2seq\)$"):
        export_ctranslate2(rnn, vocab, vocab, tmp_path / "rnn")
    model = _random_model(vocab.vocab_size)
    with pytest.raises(ValueError, match="quantization must be one of"):
        export_ctranslate2(model, vocab, vocab, tmp_path / "q", quantization="int4")
    with pytest.raises(ValueError, match="source_tokenizer has 9 ids but the model's source embedding has 10"):
        export_ctranslate2(model, Vocab(list("abcde"), level="char"), vocab, tmp_path / "v")
    with pytest.raises(ValueError, match="post-norm model with none"):
        export_ctranslate2(_random_model(vocab.vocab_size, encoder_layers=0, norm_first=False), vocab, vocab, tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written by a refused export
    export = export_ctranslate2(model, vocab, vocab, tmp_path / "ok", max_positions=30)
    translator = load_ctranslate2(export, threads=1)
    with pytest.raises(ValueError, match="num_hypotheses <= beam_size"):
        translator.translate(["abc"], beam_size=2, num_hypotheses=3)
    with pytest.raises(ValueError, match=r"max_len must lie in \[1, 30\]"):
        translator.translate(["abc"], max_len=31)
    with pytest.raises(ValueError, match="source 1 has 31 tokens; this export's position table holds 30"):
        translator.translate(["abc", "a" * 31])
    empty = translator.translate([""], beam_size=2, num_hypotheses=2)  # CTranslate2 does not decode an empty source
    assert [(h.token_ids, h.finished, h.score) for h in empty[0]] == [([], False, 0.0)] * 2
    monkey = pytest.MonkeyPatch()
    monkey.setitem(sys.modules, "ctranslate2", None)  # as if it were not installed
    with pytest.raises(ExportError, match=r"pip install 'attnkit\[deploy\]'"):
        load_ctranslate2(export)
    monkey.undo()


def _copy(export, tmp_path, name="copy"):
    return shutil.copytree(export, tmp_path / name)


def test_tampered_or_incomplete_exports_are_refused_with_one_clear_error(trained, tmp_path):
    _, source_tok, _, _, export, _ = trained
    changed = _copy(export, tmp_path, "changed")
    weights = bytearray((changed / "model.bin").read_bytes())
    weights[-5] ^= 0x01  # one bit of one weight
    (changed / "model.bin").write_bytes(bytes(weights))
    with pytest.raises(ExportError, match=r"changed/model\.bin: differs from attnkit_export\.json"):
        load_ctranslate2(changed)

    missing = _copy(export, tmp_path, "missing")
    (missing / "target_vocabulary.json").unlink()
    with pytest.raises(ExportError, match=r"missing/target_vocabulary\.json: missing \(the export is incomplete\)"):
        load_ctranslate2(missing)

    other_model = export_ctranslate2(
        _random_model(source_tok.vocab_size), source_tok, source_tok, tmp_path / "other"
    )  # a different model, exported the same way
    swapped = _copy(export, tmp_path, "swapped")
    shutil.copy(other_model / MANIFEST_FILE, swapped / MANIFEST_FILE)
    with pytest.raises(ExportError, match="the manifest is another export's"):
        load_ctranslate2(swapped)

    edited = _copy(export, tmp_path, "edited")
    manifest = json.loads((edited / MANIFEST_FILE).read_text())
    manifest["model"]["dim"] = 64
    (edited / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ExportError, match="does not match model_config_sha256"):
        load_ctranslate2(edited)

    unlisted = _copy(export, tmp_path, "unlisted")
    manifest = json.loads((unlisted / MANIFEST_FILE).read_text())
    del manifest["files"]["model.bin"]
    (unlisted / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ExportError, match=r"does not list model\.bin"):
        load_ctranslate2(unlisted)

    (tmp_path / "plain").mkdir()
    with pytest.raises(ExportError, match=r"no attnkit_export\.json: not an attnkit CTranslate2 export"):
        load_ctranslate2(tmp_path / "plain")
    with pytest.raises(ExportError, match="no such directory"):
        load_ctranslate2(tmp_path / "nowhere")


def test_an_export_names_its_task_so_commands_find_it_by_kind(trained, tmp_path):
    from attnkit.checkpointing import CheckpointError
    from attnkit.tasks import task_for_checkpoint

    export = trained[4]
    assert json.loads((export / MANIFEST_FILE).read_text())["kind"] == "seq2seq"
    task, path = task_for_checkpoint(export, exports=True)
    assert (task.kind, path) == ("seq2seq", export)
    with pytest.raises(CheckpointError, match="a CTranslate2 export written by attnkit export, not a checkpoint"):
        task_for_checkpoint(export)  # a checkpoint is asked for: an export is not one
    older = _copy(export, tmp_path, "older")  # written before manifests named their kind: seq2seq
    manifest = json.loads((older / MANIFEST_FILE).read_text())
    del manifest["kind"]
    (older / MANIFEST_FILE).write_text(json.dumps(manifest))
    assert task_for_checkpoint(older, exports=True)[0].kind == "seq2seq"
    (older / MANIFEST_FILE).write_text(json.dumps({**manifest, "kind": "speech"}))
    with pytest.raises(ValueError, match="unknown checkpoint kind 'speech'"):
        task_for_checkpoint(older, exports=True)


def test_exports_never_replace_what_they_should_not(trained, tmp_path):
    model, source_tok, target_tok, _, export, _ = trained
    target = _copy(export, tmp_path, "again")
    with pytest.raises(ExportError, match="holds an export already"):
        export_ctranslate2(model, source_tok, target_tok, target)
    export_ctranslate2(model, source_tok, target_tok, target, overwrite=True, quantization="int8")
    assert verify_export(target)["quantization"] == "int8"
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="is not an attnkit export; refusing to replace it"):
        export_ctranslate2(model, source_tok, target_tok, tmp_path / "notes", overwrite=True)
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "notes"]  # no partial or old directories left
    manifest = verify_export(target)
    assert manifest["model"]["encoder_layers"] == 1 and manifest["model"]["positions"] == "sinusoidal"
    assert manifest["tokenizers"] == ["source_tokenizer.json", "target_tokenizer.json"]
    assert len(manifest["weights_sha256"]) == 64 and manifest["ctranslate2_version"]
