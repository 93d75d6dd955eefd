"""The fused gradient methods (one forward and one backward for gradient × input and integrated gradients) equal
Captum's, one method at a time (the reference), for the HAN and the pooled classifiers."""

from __future__ import annotations

import pytest
import torch
from _faithfulness_models import han_model, han_subject, pooled_model, pooled_subject

from attnkit.explain.faithfulness.gradients import fused_gradients, gauss_legendre

pytest.importorskip("captum", reason="the reference is Captum (pip install 'attnkit[faithfulness]')")


def _subjects():
    yield pooled_subject(pooled_model("none"), [4, 9, 17, 3])
    yield pooled_subject(pooled_model("bigru", seed=1), [4, 9, 17, 3, 22, 8, 5])
    yield pooled_subject(pooled_model("transformer", seed=2), [6, 7, 8, 9, 10])
    yield han_subject(han_model(seed=3), [[4, 5, 6], [], [7, 8], [9]])


@pytest.mark.parametrize("steps", [1, 2, 32])
def test_fused_gradients_equal_captums_one_method_at_a_time(steps):
    from attnkit.explain.faithfulness.gradients import gradient_x_input, integrated_gradients

    for subject in _subjects():
        inputs = subject.gradient_inputs()
        fused_gxi, fused_ig = fused_gradients(inputs, subject.label, steps=steps)
        reference_gxi = gradient_x_input(inputs, subject.label)
        reference_ig = integrated_gradients(inputs, subject.label, steps=steps)
        torch.testing.assert_close(fused_gxi.scores, reference_gxi.scores, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(fused_ig.scores, reference_ig.scores, rtol=1e-4, atol=1e-6)
        assert fused_ig.convergence_delta == pytest.approx(reference_ig.convergence_delta, rel=1e-3, abs=1e-6)
        alone, none = fused_gradients(inputs, subject.label, integrated=False)
        assert none is None
        torch.testing.assert_close(alone.scores, fused_gxi.scores, rtol=1e-5, atol=1e-7)


def test_gauss_legendre_integrates_polynomials_on_the_unit_interval_exactly():
    alphas, weights = gauss_legendre(3)  # exact up to degree 5
    assert bool(((alphas > 0) & (alphas < 1)).all())
    assert float(weights.sum()) == pytest.approx(1.0, abs=1e-12)
    for degree in range(6):
        assert float((weights * alphas**degree).sum()) == pytest.approx(1 / (degree + 1), abs=1e-12)
    with pytest.raises(ValueError, match="steps"):
        gauss_legendre(0)
