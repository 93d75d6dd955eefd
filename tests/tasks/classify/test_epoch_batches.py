"""The classifier's epoch batches are sized, so a step-counted cosine schedule can run without a time budget."""

from __future__ import annotations

import pytest

from attnkit.data.batching import EncodedDataset, collate_tokens
from attnkit.tasks.classify.encoding import make_batches


@pytest.mark.parametrize("bucketed", [True, False])
@pytest.mark.parametrize(("documents", "batch_size", "expected"), [(10, 4, 3), (8, 4, 2), (1, 4, 1)])
def test_len_is_the_number_of_batches_an_epoch_yields(bucketed, documents, batch_size, expected):
    dataset = EncodedDataset([[1] * (1 + i % 5) for i in range(documents)], [i % 2 for i in range(documents)])
    batches = make_batches(dataset, collate_tokens, batch_size, shuffle=True, bucketed=bucketed, seed=3)
    for epoch in (1, 2):
        epoch_batches = batches(epoch)
        collated = list(epoch_batches)
        assert len(epoch_batches) == len(collated) == expected
        assert sorted(int(n) for batch in collated for n in batch.mask.sum(1)) == sorted(dataset.lengths)


def test_a_cosine_run_without_a_budget_trains(tmp_path):
    from attnkit.cli import main

    rows = [("great tea", "pos"), ("awful tea", "neg")] * 8
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "\n".join(f"{text},{label}" for text, label in rows) + "\n")
    argv = ["train", "classify", "--data", str(train), "--model", "pooled", "--encoder", "none", "--epochs", "2",
            "--schedule", "cosine", "--warmup-steps", "2", "--out", str(tmp_path / "run"), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
