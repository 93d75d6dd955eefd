"""TransformerEncoder on packed documents and on length buckets equals the padded batch, in values and gradients.

The padded :meth:`TransformerEncoder.forward` is the reference; the packed path (one projection over the real
tokens, fused SDPA per document) and its own readable reference (``fast_path = False``: the module on each
document alone) must agree with it at every real position, and so must their gradients.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnkit.data.batching import BucketBatchSampler
from attnkit.masks import lengths_to_mask
from attnkit.models import TransformerEncoder, TransformerEncoderLayer
from attnkit.positions import RotaryPositions

LENGTHS = [5, 1, 12, 3, 7, 12, 2]


def padded_batch(lengths: list[int], dim: int, extra: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """x ``[B, T, D]`` with garbage at the padding (T = longest + extra), mask ``[B, T]``."""
    generator = torch.Generator().manual_seed(seed)
    mask = lengths_to_mask(torch.tensor(lengths), max(lengths) + extra)
    return torch.randn(*mask.shape, dim, generator=generator, dtype=torch.float64), mask


def encoder(norm_first: bool, activation=nn.GELU, dim: int = 16) -> TransformerEncoder:
    torch.manual_seed(1)
    model = TransformerEncoder(dim, 4, 2, ff_dim=32, dropout=0.1, norm_first=norm_first, activation=activation)
    return model.double().eval()  # eval: no dropout, so both paths compute the same function


def grads(model: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    return [x.grad] + [p.grad for p in model.parameters()]


def zero(model: nn.Module, x: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    x.grad = None


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("fast", [True, False])
def test_packed_equals_padded_in_values_and_gradients(norm_first: bool, fast: bool) -> None:
    model = encoder(norm_first, nn.ReLU if norm_first else nn.GELU)
    for layer in model.layers:
        layer.attention.fast_path = fast and layer.attention.fast_path  # False: the per-document reference
    x, mask = padded_batch(LENGTHS, 16)
    x.requires_grad_(True)
    weight = torch.randn((*mask.shape, 16), dtype=torch.float64)[mask]  # [N, D]: a loss reading every output

    padded, _ = model(x, mask)
    (padded[mask] * weight).sum().backward()
    expected_out, expected_grads = padded[mask].detach(), grads(model, x)
    zero(model, x)

    packed = model.forward_packed(x[mask], torch.tensor(LENGTHS))  # [N, D]
    (packed * weight).sum().backward()
    torch.testing.assert_close(packed.detach(), expected_out, atol=1e-10, rtol=1e-10)
    for got, expected in zip(grads(model, x), expected_grads, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-10, rtol=1e-10)
    assert (x.grad[~mask] == 0).all()  # padding contributes nothing


def test_packed_layer_with_rotary_equals_padded() -> None:
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(16, 4, ff_dim=32, rotary=RotaryPositions(4)).double().eval()
    x, mask = padded_batch(LENGTHS, 16)
    padded, _ = layer(x, mask)
    torch.testing.assert_close(layer.forward_packed(x[mask], LENGTHS), padded[mask], atol=1e-10, rtol=1e-10)


def test_packed_handles_empty_documents_and_checks_lengths() -> None:
    model = encoder(True)
    lengths = [3, 0, 4, 0]
    x = torch.randn(7, 16, dtype=torch.float64, requires_grad=True)
    out = model.forward_packed(x, lengths)
    alone = torch.cat([model.forward_packed(x[:3], [3]), model.forward_packed(x[3:], [4])])
    torch.testing.assert_close(out, alone)
    out.sum().backward()
    assert torch.isfinite(x.grad).all()
    assert model.forward_packed(x[:0], [0, 0]).shape == (0, 16)
    with pytest.raises(ValueError, match="sum to the packed input's N=7"):
        model.forward_packed(x, [3, 3])


def test_buckets_give_the_padded_batch_per_document_float32() -> None:
    """Length buckets (sub-batches padded to their own longest) give each document what the big batch gives."""
    torch.manual_seed(0)
    model = TransformerEncoder(32, 4, 2, ff_dim=64, dropout=0.1, norm_first=False, activation=nn.ReLU).eval()
    lengths = [17, 3, 80, 40, 5, 9, 61, 2, 33, 80]
    x, mask = padded_batch(lengths, 32, extra=0)
    x = x.float()
    with torch.no_grad():
        padded, _ = model(x, mask)
        for bucket in BucketBatchSampler(lengths, 3, shuffle=False, pool_batches=None):
            longest = max(lengths[i] for i in bucket)
            out, _ = model(x[bucket, :longest], mask[bucket, :longest])
            for row, i in enumerate(bucket):
                n = lengths[i]
                assert (out[row, :n] - padded[i, :n]).abs().max() <= 1e-5
        packed = model.forward_packed(x[mask], lengths)
    assert (packed - padded[mask]).abs().max() <= 1e-5


def test_attention_dropout_is_on_the_weights_and_off_by_default() -> None:
    model = TransformerEncoder(16, 4, 1)
    assert model.layers[0].attention.dropout == 0.0  # the fused SDPA kernel while training
    model = TransformerEncoder(16, 4, 1, attention_dropout=0.2).train()
    assert model.layers[0].attention.dropout == 0.2
    x = torch.randn(10, 16)
    out = model.forward_packed(x, [6, 4])
    assert out.shape == (10, 16) and torch.isfinite(out).all()
