"""Gradient × input and integrated gradients of many documents in one batched forward and backward equal each
document's own fused pass (the reference), for the HAN and the pooled classifiers, with documents of different
lengths padded together; ``faithfulness_of`` gives the same results with the batched path as without it."""

from __future__ import annotations

import pytest
import torch
from _faithfulness_models import han_model, han_subject, pooled_model, pooled_subject

from attnkit.explain.faithfulness import evaluate
from attnkit.explain.faithfulness.gradients import fused_gradients, fused_gradients_batched

DOCUMENTS = [[4, 9, 17, 3], [5], [4, 9, 17, 3, 22, 8, 5, 30, 31], [6, 7]]
HAN_DOCUMENTS = [[[4, 5, 6], [], [7, 8], [9]], [[10]], [[11, 12, 13, 14, 15], [16, 17]], [[], [18, 19]]]


def _families():
    model = pooled_model("none")
    yield [pooled_subject(model, ids) for ids in DOCUMENTS]
    model = pooled_model("bigru", seed=1)
    yield [pooled_subject(model, ids) for ids in DOCUMENTS]
    model = pooled_model("transformer", seed=2)
    yield [pooled_subject(model, ids) for ids in DOCUMENTS]
    model = han_model(seed=3)
    yield [han_subject(model, sentences) for sentences in HAN_DOCUMENTS]


@pytest.mark.parametrize("steps", [1, 8])
def test_batched_gradients_equal_each_documents_own(steps):
    for subjects in _families():
        inputs = type(subjects[0]).batched_gradient_inputs(subjects)
        batched = fused_gradients_batched(inputs, [s.label for s in subjects], steps=steps)
        for subject, (gxi, ig) in zip(subjects, batched, strict=True):
            alone_gxi, alone_ig = fused_gradients(subject.gradient_inputs(), subject.label, steps=steps)
            assert gxi.scores.shape == (len(subject.tokens),)
            torch.testing.assert_close(gxi.scores, alone_gxi.scores, rtol=1e-4, atol=1e-6)
            torch.testing.assert_close(ig.scores, alone_ig.scores, rtol=1e-4, atol=1e-6)
            assert ig.convergence_delta == pytest.approx(alone_ig.convergence_delta, rel=1e-2, abs=1e-6)
        without_ig = fused_gradients_batched(inputs, [s.label for s in subjects], integrated=False)
        for (gxi, _), (alone, none) in zip(batched, without_ig, strict=True):
            assert none is None
            torch.testing.assert_close(alone.scores, gxi.scores, rtol=1e-4, atol=1e-6)


def test_batched_gradients_refuse_mismatched_labels_and_models():
    model = pooled_model("none")
    subjects = [pooled_subject(model, ids) for ids in DOCUMENTS]
    inputs = type(subjects[0]).batched_gradient_inputs(subjects)
    with pytest.raises(ValueError, match="labels"):
        fused_gradients_batched(inputs, [0], steps=2)
    other = pooled_subject(pooled_model("none", seed=5), [4, 5])
    with pytest.raises(ValueError, match="different models"):
        type(other).batched_gradient_inputs([subjects[0], other])


def test_faithfulness_of_is_the_same_with_and_without_the_batched_gradients(monkeypatch):
    methods = ["attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random"]
    for subjects in _families():
        fast = evaluate.faithfulness_of(subjects, methods=methods, steps=4)
        monkeypatch.setattr(evaluate, "batched_gradients", lambda subjects, methods, steps: [None] * len(subjects))
        slow = evaluate.faithfulness_of(subjects, methods=methods, steps=4)
        monkeypatch.undo()
        for a, b in zip(fast, slow, strict=True):
            for name in methods:
                torch.testing.assert_close(
                    torch.tensor(a.methods[name].scores), torch.tensor(b.methods[name].scores), rtol=1e-4, atol=1e-6
                )
            delta = a.methods["integrated_gradients"].convergence_delta
            assert delta == pytest.approx(b.methods["integrated_gradients"].convergence_delta, rel=1e-2, abs=1e-6)


def test_chunks_keep_order_and_the_row_budget(monkeypatch):
    monkeypatch.setattr(evaluate, "BATCH_ROWS", 10)
    assert evaluate._chunks([3, 1, 2, 0], [2, 3, 4, 20]) == [[3, 1], [2], [0]]  # 3·2 <= 10; 4·3 > 10; 20 alone
    assert evaluate._chunks([], []) == []
