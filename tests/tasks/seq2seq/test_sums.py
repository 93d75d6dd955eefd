"""Seq2SeqObjective under DDP: statistics summed over shards give exactly the metrics of the whole split (WER/PER
counts, sacreBLEU's BLEU and chrF sufficient statistics)."""

import pytest
import torch

from attnkit.data.seq2seq import PairDataset, Vocab, make_loader
from attnkit.models.seq2seq import build_seq2seq
from attnkit.tasks.seq2seq.metrics import corpus_bleu, corpus_chrf
from attnkit.tasks.seq2seq.objective import Seq2SeqObjective, sacrebleu_score, sacrebleu_sums
from attnkit.tasks.seq2seq.scoring import SEQUENCE, TEXT

HYPOTHESES = [
    "the cat sat on the mat",
    "a dog barked at night .",
    "he went home",
    "",
    "in the beginning god created the heaven and the earth",
    "and the earth was without form",
]
REFERENCES = [
    "the cat sat on a mat",
    "the dog barked all night .",
    "she went home early",
    "nothing here",
    "in the beginning god created the heaven and the earth",
    "and the earth was without form , and void",
]


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def add(*sums):
    """What ``all_reduce_sums`` does across ranks."""
    sums = list(sums)
    return {key: sum(s[key] for s in sums) for key in sums[0]}


@pytest.mark.parametrize("name, reference", [("bleu", corpus_bleu), ("chrf", corpus_chrf)])
def test_sacrebleu_statistics_summed_over_shards_give_the_corpus_score(name, reference):
    whole = reference(HYPOTHESES, REFERENCES)
    assert 10.0 < whole < 90.0  # a score with partial matches, not a trivial 0 or 100
    shards = [sacrebleu_sums(name, HYPOTHESES[i::3], REFERENCES[i::3]) for i in range(3)]
    assert sacrebleu_score(name, add(*shards)) == pytest.approx(whole, abs=1e-9)
    empty = sacrebleu_sums(name, [], [])  # a rank with nothing to score still reports every key, as zeros
    assert set(empty) == set(shards[0]) and not any(empty.values())
    assert sacrebleu_score(name, add(empty, *shards)) == pytest.approx(whole, abs=1e-9)


def test_text_task_score_equals_sacrebleu():
    vocab = Vocab.build(HYPOTHESES + REFERENCES, level="symbol")
    objective = Seq2SeqObjective(torch.nn.Identity(), vocab, scoring=TEXT)
    scores = objective.score(HYPOTHESES, [[r] for r in REFERENCES])
    assert scores["bleu"] == pytest.approx(corpus_bleu(HYPOTHESES, REFERENCES))
    assert scores["chrf"] == pytest.approx(corpus_chrf(HYPOTHESES, REFERENCES))


@pytest.mark.parametrize("scoring", [SEQUENCE, TEXT])
def test_evaluate_sums_over_shards_equal_evaluate_on_everything(scoring):
    """Three "ranks" each decode a third of the split; their summed statistics give the whole split's metrics."""
    words = ["abbey", "cat", "zebra", "mat", "ox", "quiet", "bee", "jazz", "hello", "world", "seq", "tiny"]
    references = [[w[::-1], w.upper()] for w in words]  # two acceptable targets each
    vocab = Vocab.build(words + [w.upper() for w in words], level="char")
    torch.manual_seed(0)
    model = build_seq2seq(
        {"model": "transformer", "source_vocab_size": len(vocab), "target_vocab_size": len(vocab), "dim": 16}
    ).eval()

    def shard(indices):
        """The objective and batches one rank would hold: its own pairs, indexed from 0, with their references."""
        refs = [references[i] for i in indices]
        dataset = PairDataset(vocab.encode_batch([words[i] for i in indices]), vocab.encode_batch([r[0] for r in refs]))
        objective = Seq2SeqObjective(model, vocab, scoring=scoring, references=refs, max_len=8)
        return objective, make_loader(dataset, batch_size=5, shuffle=False)

    objective, loader = shard(range(len(words)))
    whole = objective.evaluate(loader)
    combined = objective.metrics_from_sums(add(*(t.evaluate_sums(b) for t, b in map(shard, rank_shards(len(words))))))
    assert combined.keys() == whole.keys()
    for key in whole:
        assert combined[key] == pytest.approx(whole[key], rel=1e-6, abs=1e-9), key
    assert whole["count"] == len(words) and 0.0 < whole["token_accuracy"] < 100.0


def rank_shards(n):
    """Indices of rank 0, 1, 2 of three: every third pair."""
    return [list(range(rank, n, 3)) for rank in range(3)]
