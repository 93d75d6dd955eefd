"""Benchmark 1: multi-head self-attention, forward + backward, with key padding, against ``nn.MultiheadAttention``.

``attnkit.MultiHeadAttention.from_torch(torch_mha)`` (identical weights) against the same ``nn.MultiheadAttention``
(``batch_first=True``) called two ways:

* the default way — ``need_weights`` defaults to True in torch, so it also averages and returns the weights
  (attnkit's default is ``need_weights=False``): the issue's target, attnkit ≤ 0.80× torch;
* with ``need_weights=False`` — torch's own SDPA path, the like-for-like comparison (reported, no target).

attnkit runs twice: with ``key_mask`` alone (every query row projected, like torch — padded rows still get torch's
output — but padded keys skip the key/value projection, since nothing reads them), and packed — ``query_mask`` set
to the same mask, as self-attention over a padded batch allows: the real rows are packed and each sequence attends
to itself with no mask (``MultiHeadAttention.forward_packed``), so padded rows cost neither projection nor
attention work and get a zero output. The packed outputs equal torch's at every real position (checked).

Key padding: lengths uniform in [T/2, T] with one full-length row, the same mask for both (torch's
``key_padding_mask`` is True at padding, attnkit's ``key_mask`` is its negation). Outputs and input gradients are
checked to match before timing. Run: ``python -m bench.mha [--quick]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

import attnkit
from bench._lib import common, timing

NAME = "mha"
TARGET = 0.80


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    embed_dim: int
    num_heads: int
    batch: int
    lengths: tuple[int, ...]
    repeats: int


FULL = Config(embed_dim=512, num_heads=8, batch=16, lengths=(128, 512), repeats=21)
QUICK = Config(embed_dim=32, num_heads=4, batch=3, lengths=(8, 16), repeats=2)


def key_padding(batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """torch-polarity ``key_padding_mask [B, T]`` (True = padding): lengths uniform in [T/2, T], row 0 full."""
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=generator)
    lengths[0] = length
    return ~attnkit.masks.lengths_to_mask(lengths, length)


def make_steps(
    torch_mha: nn.MultiheadAttention, ours: attnkit.MultiHeadAttention, x: torch.Tensor, padding: torch.Tensor
) -> dict[str, Callable[[], torch.Tensor]]:
    """Forward + backward closures for attnkit and torch (default and ``need_weights=False``); each returns the output."""
    grad_out = torch.randn_like(x)
    key_mask = ~padding

    def reset() -> None:
        x.grad = None
        torch_mha.zero_grad(set_to_none=True)
        ours.zero_grad(set_to_none=True)

    def attnkit_step() -> torch.Tensor:
        reset()
        out = ours(x, key_mask=key_mask).context
        out.backward(grad_out)
        return out

    def torch_default_step() -> torch.Tensor:
        reset()
        out, _ = torch_mha(x, x, x, key_padding_mask=padding)  # need_weights defaults to True
        out.backward(grad_out)
        return out

    def torch_no_weights_step() -> torch.Tensor:
        reset()
        out, _ = torch_mha(x, x, x, key_padding_mask=padding, need_weights=False)
        out.backward(grad_out)
        return out

    def attnkit_packed_step() -> torch.Tensor:
        reset()
        out = ours(x, key_mask=key_mask, query_mask=key_mask).context
        out.backward(grad_out)
        return out

    return {
        "attnkit": attnkit_step,
        "attnkit_packed": attnkit_packed_step,
        "torch": torch_default_step,
        "torch_no_weights": torch_no_weights_step,
    }


def check_parity(steps: dict[str, Callable[[], torch.Tensor]], x: torch.Tensor, real: torch.Tensor) -> dict[str, float]:
    """Outputs (≤ 1e-5) and input gradients (≤ 1e-5 + 1e-5 · largest) must match across the variants; return diffs."""
    results = {}
    for name, step in steps.items():
        out = step().detach().clone()
        results[name] = (out, x.grad.detach().clone())
    ref_out, ref_grad = results["torch"]
    diffs = {}
    for name in ("attnkit", "torch_no_weights"):
        out, grad = results[name]
        diffs[f"{name}_output"] = common.check_close(f"{name} output", out, ref_out, atol=1e-5)
        diffs[f"{name}_grad_input"] = common.check_close(f"{name} input gradient", grad, ref_grad, rtol=1e-5)
    packed, _ = results["attnkit_packed"]
    diffs["attnkit_packed_output"] = common.check_close("packed output", packed[real], ref_out[real], atol=1e-5)
    if packed[~real].abs().max() if (~real).any() else 0:
        raise AssertionError("packed output is not zero at padded positions")
    return diffs


def bench_length(
    config: Config, length: int, repeats: int, *, quiet: bool = True
) -> tuple[list[common.Row], dict[str, object]]:
    """Build both modules at one sequence length, check parity, time them; return table rows and raw samples."""
    generator = torch.Generator().manual_seed(length)
    torch_mha = nn.MultiheadAttention(config.embed_dim, config.num_heads, batch_first=True)
    ours = attnkit.MultiHeadAttention.from_torch(torch_mha)
    x = torch.randn(config.batch, length, config.embed_dim, generator=generator).requires_grad_(True)
    padding = key_padding(config.batch, length, generator)
    steps = make_steps(torch_mha, ours, x, padding)
    diffs = check_parity(steps, x, ~padding)
    timings = timing.compare(steps, repeats=repeats, warmup=2, quiet=quiet)
    ak, packed, default, no_weights = (
        timings.median(k) for k in ("attnkit", "attnkit_packed", "torch", "torch_no_weights")
    )
    size = f"E={config.embed_dim} H={config.num_heads} B={config.batch} T={length}"
    rows = [
        common.Row("mha fwd+bwd", size, ak, default, "torch, need_weights=True (default)", "s", TARGET),
        common.Row("mha fwd+bwd", size, ak, no_weights, "torch, need_weights=False", "s", None),
        common.Row(
            "mha fwd+bwd packed (query_mask)", size, packed, default, "torch, need_weights=True (default)", "s", TARGET
        ),
        common.Row("mha fwd+bwd packed (query_mask)", size, packed, no_weights, "torch, need_weights=False", "s", None),
    ]
    print(timings.summary(f"mha T={length}"), flush=True)
    detail = {"size": size, "length": length, "max_abs_diff": diffs, **timings.to_json()}
    return rows, detail


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Run the benchmark; return the rows and the JSON payload (without machine info)."""
    common.setup()
    config = QUICK if quick else FULL
    repeats = repeats or config.repeats
    rows, details = [], []
    for length in config.lengths:
        length_rows, detail = bench_length(config, length, repeats, quiet=not quick)
        rows += length_rows
        details.append(detail)
    payload = {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats, "padding": "lengths uniform in [T/2, T], row 0 full"},
        "rows": common.rows_payload(rows),
        "details": details,
    }
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table, write ``<out>/mha.json``."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
