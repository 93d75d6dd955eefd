"""The masking experiment's three padding treatments: masked == renormalised (weights), unmasked leaks."""

from __future__ import annotations

import pytest
import torch

from attnkit.masks import lengths_to_mask
from attnkit.models.padding import RenormalisedSoftmax, UnmaskedPooling
from attnkit.models.pooled import build_pooling
from attnkit.pooling import AttentionPooling
from attnkit.tasks.classify.config import ClassifierConfig, build_classifier


def padded_batch(lengths: list[int], dim: int = 8, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random features with exact zero vectors at padding (what a padding_idx embedding gives)."""
    generator = torch.Generator().manual_seed(seed)
    mask = lengths_to_mask(torch.tensor(lengths), max(lengths) + 5)  # [B, T], extra padding everywhere
    x = torch.randn(len(lengths), mask.shape[1], dim, generator=generator) * mask[..., None]
    return x, mask


@pytest.mark.parametrize("name", ["attention", "multihead"])
def test_masked_and_renormalised_pooling_give_the_same_weights_and_outputs(name):
    torch.manual_seed(0)
    masked = build_pooling(name, 8, heads=3, padding="masked")
    renormalised = build_pooling(name, 8, heads=3, padding="renormalised")
    renormalised.load_state_dict(masked.state_dict())
    x, mask = padded_batch([7, 3, 1, 12])
    a, c = masked(x, mask), renormalised(x, mask)
    assert isinstance(renormalised.distribution, RenormalisedSoftmax)
    assert (a.weights - c.weights).abs().max() <= 1e-6
    assert (a.context - c.context).abs().max() <= 1e-6
    assert torch.all(c.weights[~mask[:, None, :].expand_as(c.weights)] == 0)


def test_renormalised_softmax_by_hand_and_on_an_empty_row():
    scores = torch.tensor([[0.0, 1.0, 5.0], [2.0, 3.0, 4.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    weights = RenormalisedSoftmax()(scores, mask)
    e = torch.e
    assert torch.allclose(weights[0], torch.tensor([1 / (1 + e), e / (1 + e), 0.0]))
    assert torch.equal(weights[1], torch.zeros(3))
    half = RenormalisedSoftmax()(scores.half(), mask)
    assert half.dtype == torch.float16 and torch.isfinite(half).all()


def test_unmasked_pooling_puts_weight_on_padding_and_depends_on_it():
    torch.manual_seed(0)
    unmasked = build_pooling("attention", 8, padding="unmasked")
    assert isinstance(unmasked, UnmaskedPooling) and isinstance(unmasked.pooling, AttentionPooling)
    x, mask = padded_batch([4, 9])
    out = unmasked(x, mask)
    assert out.weights[0, 0, 4:].sum() > 0.1  # padding scored like tokens: tanh(b) keys take real mass
    longer = torch.cat([x, torch.zeros(2, 10, 8)], dim=1)  # more padding changes the first document's output
    assert (unmasked(longer, None).context[0] - out.context[0]).abs().max() > 1e-4


def test_the_config_builds_each_mode_and_rejects_others():
    for mode in ("masked", "unmasked", "renormalised"):
        config = ClassifierConfig(model="pooled", encoder="none", attention_padding=mode, label_names=["a", "b"])
        model = build_classifier(config, vocab_size=50)
        logits = model(torch.randint(1, 50, (2, 6)), torch.ones(2, 6, dtype=torch.bool)).logits
        assert logits.shape == (2, 2)
    with pytest.raises(ValueError, match="attention_padding must be one of"):
        ClassifierConfig(attention_padding="sometimes")
    with pytest.raises(ValueError, match="unknown padding mode 'x'"):
        build_pooling("attention", 8, padding="x")
