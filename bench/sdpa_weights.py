"""Benchmark 2: masked scaled dot-product attention forward, against ``F.scaled_dot_product_attention``.

``(B, H, T, Dh) = (8, 8, 512, 64)`` with a boolean key-padding mask ``[B, 1, 1, T]`` (True = attend; lengths
uniform in [T/2, T], row 0 full), the same mask for both. Rows:

1. ``attnkit.functional.sdpa.scaled_dot_product_attention(q, k, v, mask)`` vs SDPA — target ≤ 1.05×;
2. the same with ``need_weights=True`` under ``torch.no_grad()`` (inference) vs SDPA — target ≤ 1.5×;
3. ``need_weights=True`` with grad enabled (training: the autograd formula) vs SDPA with grad enabled, forward
   only — reported, no target.

Contexts are checked against SDPA and weights against the readable ``masked_softmax`` formula before timing.
Run: ``python -m bench.sdpa_weights [--quick]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnkit import masks
from attnkit.functional import masked_softmax
from attnkit.functional.sdpa import scaled_dot_product_attention
from bench._lib import common, timing

NAME = "sdpa_weights"
TARGET_NO_WEIGHTS = 1.05
TARGET_WEIGHTS = 1.5
INNER = 3  # calls per sample: one call is ~40 ms, short against the 10 ms tick that measures other processes' load


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    batch: int
    heads: int
    length: int
    head_dim: int
    repeats: int


FULL = Config(batch=8, heads=8, length=512, head_dim=64, repeats=31)
QUICK = Config(batch=2, heads=2, length=16, head_dim=8, repeats=2)


def make_inputs(config: Config, *, requires_grad: bool = False):
    """``q, k, v [B, H, T, Dh]`` and the key-padding mask ``[B, 1, 1, T]`` (True = attend)."""
    generator = torch.Generator().manual_seed(0)
    shape = (config.batch, config.heads, config.length, config.head_dim)
    q, k, v = (torch.randn(shape, generator=generator).requires_grad_(requires_grad) for _ in range(3))
    lengths = torch.randint(config.length // 2, config.length + 1, (config.batch,), generator=generator)
    lengths[0] = config.length
    mask = masks.lengths_to_mask(lengths, config.length)[:, None, None, :]  # [B, 1, 1, T]
    return q, k, v, mask


def check_values(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """attnkit's context (both paths) vs SDPA, and its weights (both paths) vs the readable formula (≤ 1e-5)."""
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    reference_weights = masked_softmax((q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5, mask)
    diffs = {}
    context, _ = scaled_dot_product_attention(q, k, v, mask)
    diffs["context"] = common.check_close("context (no weights)", context, expected)
    with torch.no_grad():
        context, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    diffs["inference_context"] = common.check_close("context (inference weights path)", context, expected)
    diffs["inference_weights"] = common.check_close("weights (inference path)", weights, reference_weights)
    grad_inputs = [t.detach().requires_grad_(True) for t in (q, k, v)]
    context, weights = scaled_dot_product_attention(*grad_inputs, mask, need_weights=True)
    diffs["training_context"] = common.check_close("context (training weights path)", context, expected)
    diffs["training_weights"] = common.check_close("weights (training path)", weights, reference_weights)
    return diffs


def time_inference(q, k, v, mask, repeats: int, quiet: bool) -> timing.Timings:
    """Forward without autograd (plain tensors; the weights path under ``no_grad``): the two targeted rows."""

    def attnkit_weights() -> object:
        with torch.no_grad():
            return scaled_dot_product_attention(q, k, v, mask, need_weights=True)

    fns: dict[str, Callable[[], object]] = {
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        "attnkit": lambda: scaled_dot_product_attention(q, k, v, mask),
        "attnkit_weights": attnkit_weights,
    }
    return timing.compare(fns, repeats=repeats, warmup=3, inner=INNER, quiet=quiet)


def time_training(config: Config, repeats: int, quiet: bool) -> timing.Timings:
    """Forward with grad enabled (inputs require grad, graph built): SDPA vs attnkit's weights path."""
    q, k, v, mask = make_inputs(config, requires_grad=True)
    fns: dict[str, Callable[[], object]] = {
        "sdpa_grad": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
        "attnkit_weights_grad": lambda: scaled_dot_product_attention(q, k, v, mask, need_weights=True),
    }
    return timing.compare(fns, repeats=repeats, warmup=3, inner=INNER, quiet=quiet)


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Run the benchmark; return the rows and the JSON payload (without machine info)."""
    common.setup()
    config = QUICK if quick else FULL
    repeats = repeats or config.repeats
    q, k, v, mask = make_inputs(config)
    diffs = check_values(q, k, v, mask)
    inference = time_inference(q, k, v, mask, repeats, quiet=not quick)
    training = time_training(config, repeats, quiet=not quick)
    print(inference.summary("sdpa inference"), training.summary("sdpa grad on"), sep="\n", flush=True)
    sdpa, ours, ours_weights = (inference.median(n) for n in ("sdpa", "attnkit", "attnkit_weights"))
    sdpa_grad, ours_grad = training.median("sdpa_grad"), training.median("attnkit_weights_grad")
    size = f"B={config.batch} H={config.heads} T={config.length} Dh={config.head_dim}"
    rows = [
        common.Row("sdpa fwd, no weights", size, ours, sdpa, "F.sdpa", "s", TARGET_NO_WEIGHTS),
        common.Row("sdpa fwd, weights, no_grad", size, ours_weights, sdpa, "F.sdpa", "s", TARGET_WEIGHTS),
        common.Row("sdpa fwd, weights, grad on", size, ours_grad, sdpa_grad, "F.sdpa, grad on", "s"),
    ]
    payload = {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats, "mask": "key padding [B, 1, 1, T], lengths in [T/2, T]"},
        "rows": common.rows_payload(rows),
        "details": {"max_abs_diff": diffs, "inference": inference.to_json(), "training": training.to_json()},
    }
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table, write ``<out>/sdpa_weights.json``."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
