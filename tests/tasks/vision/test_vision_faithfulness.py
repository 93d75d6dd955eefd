"""The faithfulness tests on a visual attention classifier: the units are the cells of its feature grid."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")


def test_grid_cells_of_a_visual_attention_classifier():
    """Vision: the units are grid cells; ``delete`` leaves a cell out of the pooling exactly as its mask does;
    the attention's comprehensiveness curve is the deletion curve over cells."""
    from types import SimpleNamespace

    from attnkit.models.visual import visual_attention_classifier
    from attnkit.tasks.vision.faithfulness import GridSubject, vision_faithfulness

    torch.manual_seed(0)
    model = visual_attention_classifier(3, channels=(4, 8), downsample=(0,), heads=2, dropout=0.0).eval()
    images = torch.rand(2, 1, 8, 8)
    subject = GridSubject(model, images[0], ["a", "b", "c"])
    assert len(subject.tokens) == 16 and subject.tokens[5] == "r1c1"
    keep = torch.ones(1, 16, dtype=torch.bool)
    keep[0, 3] = False
    with torch.no_grad():
        out = model.attend(subject.grid, attend_mask=keep)
    assert out.pooling.weights[0, :, 3].abs().max() == 0
    torch.testing.assert_close(subject.probabilities_when(keep, "delete")[0], torch.softmax(out.logits[0], -1))
    results = vision_faithfulness(SimpleNamespace(model=model, label_names=["a", "b", "c"]), images, steps=16)
    assert len(results) == 2 and len(results[1].methods["attention"].scores) == 16
    assert results[0].methods["integrated_gradients"].convergence_delta < 1e-3
