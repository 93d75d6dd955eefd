"""Benchmark 5: tokens/s of a Transformer encoder on long-tailed documents, length-aware vs one padded batch.

A batch of 32 documents whose lengths are long-tailed (log-normal, median 120 tokens, clipped to [8, 800], the
longest set to 800; fixed seed) goes through a 2-layer encoder (d 256, 4 heads, feed-forward 1024, ReLU,
post-norm, sinusoidal positions) two ways with the **same weights**:

* **peer** — ``nn.TransformerEncoder(nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024,
  batch_first=True), 2)`` on the ``[32, 800]`` padded batch with ``src_key_padding_mask``. Training: train mode
  with its default dropout 0.1 (which includes dropout on the attention weights: SDPA's slow math kernel, every
  ``[800, 800]`` weight matrix materialised). Inference: eval mode under ``no_grad``, where torch takes its
  nested-tensor fast path (``enable_nested_tensor=True``, the default).
* **attnkit** — :class:`attnkit.models.TransformerEncoder` (``norm_first=False, activation=nn.ReLU``), dropout
  0.1 on the residual branches and inside the feed-forward (attention dropout 0: the fused SDPA kernel), run:

  - *packed* (the target rows): :meth:`~attnkit.models.TransformerEncoder.forward_packed` on ``x[mask]``, the
    5,452 real tokens one document after another — position-wise work over real tokens only, attention per
    document with no mask;
  - *buckets* (reported): :class:`attnkit.data.batching.BucketBatchSampler` (sorted, 4 documents per
    sub-batch), each sub-batch padded to its own longest and run through the padded ``forward``, gradients
    accumulated over the sub-batches;
  - *padded* (training, reported): ``forward`` on the whole ``[32, 800]`` batch — the fused SDPA kernel alone.

Training = forward + backward of the same loss, the mean square of the outputs at real tokens. Tokens/s counts
real tokens only, for both. Before timing (eval mode, dropout off): every attnkit variant's outputs must equal
the peer's at real positions (≤ 1e-5), both of torch's paths, and the input gradients must match.
Sinusoidal positions are attnkit's module on both sides (added to the peer's input inside its timed step).
Run: ``python -m bench.encoder_bucketing [--quick]``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attnkit.data.batching import BucketBatchSampler
from attnkit.masks import lengths_to_mask
from attnkit.models import TransformerEncoder
from bench._lib import common, timing

NAME = "encoder_bucketing"
TRAIN_SPEEDUP_TARGET = 6.0  # tokens/s of attnkit (packed) over the peer, training
INFERENCE_SPEEDUP_TARGET = 4.0  # the same, inference, against torch's nested-tensor fast path
NESTED_WARNING = "The PyTorch API of nested tensors is in prototype stage"  # torch's fast path says so every time


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    dim: int
    heads: int
    ff_dim: int
    layers: int
    batch: int
    median_len: int
    max_len: int
    min_len: int
    sigma: float  # of log(length)
    bucket_size: int  # documents per sub-batch in the bucketed variant
    dropout: float
    repeats: int


FULL = Config(256, 4, 1024, 2, batch=32, median_len=120, max_len=800, min_len=8, sigma=0.8, bucket_size=4,
              dropout=0.1, repeats=5)  # fmt: skip
QUICK = Config(32, 4, 64, 2, batch=6, median_len=10, max_len=40, min_len=2, sigma=0.8, bucket_size=2,
               dropout=0.1, repeats=2)  # fmt: skip


def document_lengths(config: Config, seed: int = 0) -> list[int]:
    """``config.batch`` long-tailed lengths: log-normal around the median, clipped, the longest set to the max."""
    generator = torch.Generator().manual_seed(seed)
    logs = math.log(config.median_len) + config.sigma * torch.randn(config.batch, generator=generator)
    lengths = logs.exp().round().clamp(config.min_len, config.max_len).long()
    lengths[lengths.argmax()] = config.max_len
    return lengths.tolist()


def parameter_pairs(ours: TransformerEncoder, peer: nn.TransformerEncoder):
    """``(attnkit tensors to concatenate, the peer's tensor)`` for every parameter of the encoder stack."""
    pairs = []
    for mine, theirs in zip(ours.layers, peer.layers, strict=True):
        attention, (linear1, _, _, linear2) = mine.attention, mine.feed_forward
        projections = (attention.q_proj, attention.k_proj, attention.v_proj)
        pairs += [
            ([p.weight for p in projections], theirs.self_attn.in_proj_weight),
            ([p.bias for p in projections], theirs.self_attn.in_proj_bias),
        ]
        for source, target in (
            (attention.out_proj, theirs.self_attn.out_proj),
            (linear1, theirs.linear1),
            (linear2, theirs.linear2),
            (mine.norm_attention, theirs.norm1),
            (mine.norm_ff, theirs.norm2),
        ):
            pairs += [([source.weight], target.weight), ([source.bias], target.bias)]
    return pairs


def build_models(config: Config) -> tuple[TransformerEncoder, nn.TransformerEncoder]:
    """attnkit's encoder and ``nn.TransformerEncoder`` holding the same weights (both in train mode)."""
    ours = TransformerEncoder(
        config.dim,
        config.heads,
        config.layers,
        ff_dim=config.ff_dim,
        dropout=config.dropout,
        norm_first=False,
        activation=nn.ReLU,
    )
    layer = nn.TransformerEncoderLayer(
        config.dim, config.heads, dim_feedforward=config.ff_dim, dropout=config.dropout, batch_first=True
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "enable_nested_tensor is True, but self.use_nested_tensor is False..."
        peer = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=True)
    with torch.no_grad():
        for sources, target in parameter_pairs(ours, peer):
            target.copy_(torch.cat(sources))
    return ours.train(), peer.train()


@dataclass
class Batch:
    """The padded batch and how attnkit sees it."""

    x: torch.Tensor  # [B, T, D], zero at padding
    mask: torch.Tensor  # [B, T] True = real token
    lengths: list[int]
    buckets: list[list[int]]  # document indices per sub-batch

    @property
    def tokens(self) -> int:
        """Real tokens in the batch."""
        return sum(self.lengths)


def make_batch(config: Config) -> Batch:
    """Random embeddings for the documents, padded to the longest; buckets of similar length."""
    lengths = document_lengths(config)
    mask = lengths_to_mask(torch.tensor(lengths), config.max_len)
    x = torch.randn(*mask.shape, config.dim, generator=torch.Generator().manual_seed(1)) * mask[..., None]
    buckets = list(BucketBatchSampler(lengths, config.bucket_size, shuffle=False, pool_batches=None))
    return Batch(x, mask, lengths, buckets)


def bucket_output(ours: TransformerEncoder, batch: Batch, x: torch.Tensor, bucket: list[int]) -> torch.Tensor:
    """One sub-batch padded to its own longest through the padded ``forward`` -> outputs at its real tokens."""
    longest = max(batch.lengths[i] for i in bucket)
    sub_mask = batch.mask[bucket, :longest]  # [b, T_b]
    out, _ = ours(x[bucket, :longest], sub_mask)
    return out[sub_mask]


def make_forwards(
    ours: TransformerEncoder, peer: nn.TransformerEncoder, batch: Batch
) -> dict[str, Callable[[torch.Tensor], list[torch.Tensor]]]:
    """Forward passes from the padded input ``x [B, T, D]``: each returns output pieces covering every real token.

    The pieces concatenate to the outputs at real tokens ``[N, D]``, document after document (buckets: in
    bucket order).
    """
    mask, padding = batch.mask, ~batch.mask

    def peer_forward(x: torch.Tensor) -> list[torch.Tensor]:
        return [peer(ours.positions(x), src_key_padding_mask=padding)[mask]]

    def packed(x: torch.Tensor) -> list[torch.Tensor]:
        return [ours.forward_packed(x[mask], batch.lengths)]

    def buckets(x: torch.Tensor) -> list[torch.Tensor]:
        return [bucket_output(ours, batch, x, bucket) for bucket in batch.buckets]

    def padded(x: torch.Tensor) -> list[torch.Tensor]:
        return [ours(x, mask)[0][mask]]

    return {"peer": peer_forward, "attnkit_packed": packed, "attnkit_buckets": buckets, "attnkit_padded": padded}


def bucket_order(batch: Batch) -> list[int]:
    """The document order of the bucketed outputs."""
    return [i for bucket in batch.buckets for i in bucket]


def reorder(batch: Batch, pieces: list[torch.Tensor], name: str) -> torch.Tensor:
    """Outputs at real tokens ``[N, D]`` in document order, whatever order the variant produced them in."""
    out = torch.cat(pieces)
    if name != "attnkit_buckets":
        return out
    per_doc = dict(zip(bucket_order(batch), out.split([batch.lengths[i] for i in bucket_order(batch)]), strict=True))
    return torch.cat([per_doc[i] for i in range(len(batch.lengths))])


def check_parity(ours: TransformerEncoder, peer: nn.TransformerEncoder, batch: Batch) -> dict[str, float]:
    """In eval mode (no dropout): outputs at real tokens and input gradients of every variant against the peer's."""
    ours.eval(), peer.eval()
    forwards = make_forwards(ours, peer, batch)
    diffs = {}
    results = {}
    for name, forward in forwards.items():
        x = batch.x.clone().requires_grad_(True)
        out = reorder(batch, forward(x), name)
        out.pow(2).mean().backward()
        results[name] = (out.detach(), x.grad)
    ref_out, ref_grad = results["peer"]
    for name, (out, grad) in results.items():
        if name != "peer":
            diffs[f"{name}_output"] = common.check_close(f"{name} output", out, ref_out, atol=1e-5)
            diffs[f"{name}_grad_input"] = common.check_close(f"{name} input gradient", grad, ref_grad, rtol=1e-4)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NESTED_WARNING)
        nested = forwards["peer"](batch.x)[0]  # eval + no_grad: torch's nested-tensor fast path
    diffs["peer_nested_output"] = common.check_close("torch fast path output", nested, ref_out, atol=1e-5)
    ours.train(), peer.train()
    return diffs


def make_steps(
    ours: TransformerEncoder, peer: nn.TransformerEncoder, batch: Batch, *, train: bool
) -> dict[str, Callable[[], None]]:
    """Zero-argument closures: a training step (forward + backward) or an inference forward, per variant."""
    forwards = make_forwards(ours, peer, batch)
    scale = 1.0 / (batch.tokens * batch.x.shape[-1])  # the loss: mean over real tokens and features

    def training(forward: Callable[[torch.Tensor], list[torch.Tensor]], bucketed: bool) -> Callable[[], None]:
        def step() -> None:
            ours.zero_grad(set_to_none=True)
            peer.zero_grad(set_to_none=True)
            if bucketed:  # one backward per sub-batch: gradients accumulate, memory stays that of one bucket
                for bucket in batch.buckets:
                    (bucket_output(ours, batch, batch.x, bucket).pow(2).sum() * scale).backward()
            else:
                (forward(batch.x)[0].pow(2).sum() * scale).backward()

        return step

    def inference(forward: Callable[[torch.Tensor], list[torch.Tensor]]) -> Callable[[], None]:
        def step() -> None:
            with torch.no_grad():
                forward(batch.x)

        return step

    if train:
        return {name: training(forward, name == "attnkit_buckets") for name, forward in forwards.items()}
    return {name: inference(forwards[name]) for name in ("peer", "attnkit_packed", "attnkit_buckets")}


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Check parity, time training and inference; return the rows and the JSON payload (without machine info)."""
    common.setup()
    config = QUICK if quick else FULL
    repeats = repeats or config.repeats
    ours, peer = build_models(config)
    batch = make_batch(config)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NESTED_WARNING)
        diffs = check_parity(ours, peer, batch)
        ours.train(), peer.train()
        training = timing.compare(make_steps(ours, peer, batch, train=True), repeats=repeats, quiet=not quick)
        print(training.summary("encoder training"), flush=True)
        ours.eval(), peer.eval()
        steps = make_steps(ours, peer, batch, train=False)
        inference = timing.compare(steps, repeats=repeats + 2, quiet=not quick)
        print(inference.summary("encoder inference"), flush=True)

    size = f"D={config.dim} L={config.layers} H={config.heads} F={config.ff_dim} B={config.batch}"
    size += f" T≤{config.max_len} N={batch.tokens}"
    train_peer = "nn.TransformerEncoder, padded, train (dropout 0.1)"
    infer_peer = "nn.TransformerEncoder, padded, nested-tensor fast path"
    t_target, i_target = 1.0 / TRAIN_SPEEDUP_TARGET, 1.0 / INFERENCE_SPEEDUP_TARGET
    k = config.bucket_size
    rows = [
        common.Row("encoder train fwd+bwd, packed", size, training.median("attnkit_packed"),
                   training.median("peer"), train_peer, "s", t_target),
        common.Row(f"encoder train fwd+bwd, buckets of {k}", size, training.median("attnkit_buckets"),
                   training.median("peer"), train_peer, "s"),
        common.Row("encoder train fwd+bwd, padded", size, training.median("attnkit_padded"),
                   training.median("peer"), train_peer, "s"),
        common.Row("encoder inference, packed", size, inference.median("attnkit_packed"),
                   inference.median("peer"), infer_peer, "s", i_target),
        common.Row(f"encoder inference, buckets of {k}", size, inference.median("attnkit_buckets"),
                   inference.median("peer"), infer_peer, "s"),
    ]  # fmt: skip
    throughput = {
        "training_tokens_per_s": {n: batch.tokens / training.median(n) for n in training.samples},
        "inference_tokens_per_s": {n: batch.tokens / inference.median(n) for n in inference.samples},
        "training_speedup": {n: training.median("peer") / training.median(n) for n in training.samples},
        "inference_speedup": {n: inference.median("peer") / inference.median(n) for n in inference.samples},
    }
    payload = {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats, "inference_repeats": repeats + 2},
        "lengths": batch.lengths,
        "real_tokens": batch.tokens,
        "padded_tokens": batch.mask.numel(),
        "buckets": batch.buckets,
        "rows": common.rows_payload(rows),
        "throughput": throughput,
        "speedup_targets": {"training": TRAIN_SPEEDUP_TARGET, "inference": INFERENCE_SPEEDUP_TARGET},
        "details": {"max_abs_diff": diffs, "training": training.to_json(), "inference": inference.to_json()},
    }
    return rows, payload


def format_throughput(payload: dict[str, object]) -> str:
    """Tokens/s of each variant and its speed-up over the peer, training then inference."""
    figures = payload["throughput"]
    lines = []
    for phase in ("training", "inference"):
        target = payload["speedup_targets"][phase]
        cells = [
            f"{name} {figures[f'{phase}_tokens_per_s'][name]:,.0f} tok/s ({figures[f'{phase}_speedup'][name]:.2f}x)"
            for name in figures[f"{phase}_tokens_per_s"]
        ]
        lines.append(f"{phase} (target packed >= {target:.0f}x): " + ", ".join(cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table and the tokens/s, write ``<out>/encoder_bucketing.json``."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    print(format_throughput(payload))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
