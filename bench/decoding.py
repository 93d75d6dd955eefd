"""Benchmark 4: greedy decoding of 256 tokens, KV-cached (attnkit) against recomputing the prefix every step.

Both sides decode a batch of 8 from the same 64-token memory with the same weights, in eval mode, and emit exactly
256 tokens per row (``<eos>`` is disabled: ``eos_id=-1`` never matches a token, so every step runs):

* **attnkit** — :class:`attnkit.models.TransformerSeq2Seq` (d 256, 4 decoder layers, 4 heads, FF 1024, vocabulary
  8,000, pre-norm, sinusoidal positions) decoded by :func:`attnkit.decoding.greedy`: one new token per step
  through every layer's :class:`~attnkit.kv_cache.KVCache`, cross-attention keys/values projected once;
* **peer** — ``nn.TransformerDecoder`` (``norm_first=True``, GELU, ``batch_first``) holding the *same* weights,
  run over the whole prefix ``[B, t]`` at step ``t`` under the causal mask (``tgt_is_causal=True``), projecting only
  the last position to the vocabulary: the usual way to decode with ``nn.Transformer``.

Embedding, positions and output projection are the very same modules on both sides; the model has no encoder
layers (its encoder is embedding + LayerNorm), so the encoder's cost — the same on both sides — stays out and the
comparison is the decoder stack's. Before timing, the two must emit identical tokens. Reported: tokens/s for each
(``B · 256 / seconds``) and the speed-up, target ≥ 20×. Run: ``python -m bench.decoding [--quick]``.

A third function is timed in the same rounds, for information: :func:`bench._lib.decoding_floor.floor_greedy`, the same
decoding as one flat loop of the kernels a cached step needs (no modules, checks or bookkeeping), which must emit
the same tokens too. ``recompute / floor`` is the most any eager-PyTorch cached decoder can gain here: when it is
below the target, the target needs fewer bytes per step or compiled kernels, not a leaner library.

Against CTranslate2 the same decoding is timed by ``bench.decoding_runtimes``, each runtime in its own fresh
process (:mod:`bench._lib.processes`): two runtimes' thread pools in one process slow each other (issue #24: 1.14×
in one process, 0.37× apart), so no runtime comparison is made here. Besides the medians, the JSON keeps each
decoder's fastest clean round.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attnkit.decoding import greedy
from attnkit.decoding_threads import decode_in_threads
from attnkit.models.transformer.seq2seq import TransformerDecoderLayer, TransformerSeq2Seq
from attnkit.multihead import MultiHeadAttention
from bench._lib import common, timing
from bench._lib import decoding_ctranslate2 as ct2
from bench._lib.decoding_floor import floor_greedy

NAME = "decoding"
SPEEDUP_TARGET = 20.0  # tokens/s of attnkit over the peer
NO_EOS = -1  # an id no token has: greedy never stops early


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    dim: int
    layers: int
    heads: int
    ff_dim: int
    vocab: int
    batch: int
    source_len: int
    steps: int
    repeats: int


FULL = Config(dim=256, layers=4, heads=4, ff_dim=1024, vocab=8000, batch=8, source_len=64, steps=256, repeats=5)
QUICK = Config(dim=32, layers=2, heads=4, ff_dim=64, vocab=50, batch=2, source_len=6, steps=12, repeats=2)


def build_model(config: Config) -> TransformerSeq2Seq:
    """attnkit's model in eval mode: no encoder layers, ``config.layers`` decoder layers, untied output."""
    return TransformerSeq2Seq(
        config.vocab,
        config.vocab,
        dim=config.dim,
        heads=config.heads,
        encoder_layers=0,
        decoder_layers=config.layers,
        ff_dim=config.ff_dim,
        dropout=0.0,
        tie_output=False,
    ).eval()


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
    theirs.out_proj.bias.copy_(ours.out_proj.bias)


def _copy_layer(ours: TransformerDecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    _copy_attention(ours.self_attention, theirs.self_attn)
    _copy_attention(ours.cross_attention, theirs.multihead_attn)
    first, _, _, second = ours.feed_forward
    for source, target in ((first, theirs.linear1), (second, theirs.linear2)):
        target.weight.copy_(source.weight)
        target.bias.copy_(source.bias)
    for source, target in (
        (ours.norm_self, theirs.norm1),
        (ours.norm_cross, theirs.norm2),
        (ours.norm_ff, theirs.norm3),
    ):
        target.weight.copy_(source.weight)
        target.bias.copy_(source.bias)


@torch.no_grad()
def torch_decoder(model: TransformerSeq2Seq, config: Config) -> nn.TransformerDecoder:
    """``nn.TransformerDecoder`` (pre-norm, GELU, final LayerNorm) with the weights of ``model``'s decoder."""
    layer = nn.TransformerDecoderLayer(
        config.dim,
        config.heads,
        dim_feedforward=config.ff_dim,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=True,
    )
    decoder = nn.TransformerDecoder(layer, config.layers, norm=nn.LayerNorm(config.dim))
    for ours, theirs in zip(model.decoder_layers, decoder.layers, strict=True):
        _copy_layer(ours, theirs)
    decoder.norm.weight.copy_(model.decoder_norm.weight)
    decoder.norm.bias.copy_(model.decoder_norm.bias)
    return decoder.eval()


@torch.no_grad()
def recompute_greedy(
    model: TransformerSeq2Seq, decoder: nn.TransformerDecoder, memory: torch.Tensor, steps: int, bos_id: int = 1
) -> torch.Tensor:
    """The peer: ``steps`` greedy tokens ``[B, steps]``, running ``decoder`` over the whole prefix at every step.

    ``memory [B, S, D]`` has no padding. Embedding, positions and the output projection are ``model``'s.
    """
    batch = memory.shape[0]
    prefix = torch.full((batch, 1), bos_id, dtype=torch.long)  # [B, 1]
    for _ in range(steps):
        x = model._embed(prefix, model.target_embedding, model.target_positions, 0)  # [B, t, D]
        causal = nn.Transformer.generate_square_subsequent_mask(prefix.shape[1])  # [t, t] float, -inf above
        hidden = decoder(x, memory, tgt_mask=causal, tgt_is_causal=True)  # [B, t, D]
        next_token = model.output(hidden[:, -1]).argmax(-1)  # [B]
        prefix = torch.cat([prefix, next_token[:, None]], dim=1)  # [B, t + 1]
    return prefix[:, 1:]


def cached_greedy(
    model: TransformerSeq2Seq, source_ids: torch.Tensor, steps: int, *, split: int | None = None
) -> torch.Tensor:
    """attnkit: ``steps`` greedy tokens ``[B, steps]`` with the KV cache (``<eos>`` disabled); ``split``: the batch
    decoded in that many slices, each in its own Python thread with one torch thread."""
    source_mask = torch.ones_like(source_ids, dtype=torch.bool)
    if split is None:
        return greedy(model, source_ids, source_mask, max_len=steps, eos_id=NO_EOS).best  # [B, steps]
    out = decode_in_threads(greedy, model, source_ids, source_mask, threads=split, max_len=steps, eos_id=NO_EOS)
    return out.best  # [B, steps]


def run(quick: bool = False, repeats: int | None = None) -> tuple[list[common.Row], dict[str, object]]:
    """Check that every side emits the same tokens, time them; return the rows and the JSON payload."""
    common.setup()
    config = QUICK if quick else FULL
    repeats = repeats or config.repeats
    model = build_model(config)
    decoder = torch_decoder(model, config)
    generator = torch.Generator().manual_seed(0)
    source_ids = torch.randint(4, config.vocab, (config.batch, config.source_len), generator=generator)
    with torch.no_grad():
        memory, _ = model.encode(source_ids, torch.ones_like(source_ids, dtype=torch.bool))  # [B, S, D]

    ours = cached_greedy(model, source_ids, config.steps)
    theirs = recompute_greedy(model, decoder, memory, config.steps)
    floor = floor_greedy(model, memory, config.steps)
    for name, other in (("recomputed", theirs), ("floor", floor)):
        if ours.shape != (config.batch, config.steps) or not torch.equal(ours, other):
            first = int((ours != other).any(0).nonzero()[0]) if ours.shape == other.shape else -1
            raise AssertionError(f"cached and {name} decoding disagree (first at step {first}); not timing")
    fns = {
        "attnkit": lambda: cached_greedy(model, source_ids, config.steps),
        "recompute": lambda: recompute_greedy(model, decoder, memory, config.steps),
        "floor": lambda: floor_greedy(model, memory, config.steps),
    }
    timings = timing.compare(fns, repeats=repeats, warmup=0 if not quick else 1, quiet=not quick)
    print(timings.summary(f"decoding {config.steps} tokens"), flush=True)
    ak, peer, least = timings.median("attnkit"), timings.median("recompute"), timings.median("floor")
    tokens = config.batch * config.steps
    size = f"D={config.dim} L={config.layers} H={config.heads} V={config.vocab} B={config.batch} S={config.source_len}"
    size += f" steps={config.steps}"
    peer_name = "nn.TransformerDecoder, prefix recomputed"
    rows = [common.Row("greedy decode", size, ak, peer, peer_name, "s", 1.0 / SPEEDUP_TARGET)]
    throughput = {
        "attnkit_tokens_per_s": tokens / ak,
        "recompute_tokens_per_s": tokens / peer,
        "speedup": peer / ak,
        "floor_tokens_per_s": tokens / least,
        "floor_speedup": peer / least,  # the most an eager cached decoder gains over the peer here
        "attnkit_over_floor": ak / least,
    }
    payload = {
        "quick": quick,
        "config": {**config.__dict__, "repeats": repeats, "eos": "disabled (eos_id=-1)", "encoder_layers": 0},
        "rows": common.rows_payload(rows),
        "throughput": throughput,
        "speedup_target": SPEEDUP_TARGET,
        "tokens_identical": True,
        "min_median_s": {name: list(ct2.min_and_median(timings, name)) for name in fns},
        "details": timings.to_json(),
    }
    return rows, payload


def format_throughput(payload: dict[str, object]) -> str:
    """``attnkit 5,432 tokens/s, recompute 123 tokens/s: 44.2x faster (target >= 20x)`` and the floor's line."""
    figures = payload["throughput"]
    lines = [
        f"attnkit {figures['attnkit_tokens_per_s']:,.0f} tokens/s, recompute {figures['recompute_tokens_per_s']:,.0f}"
        f" tokens/s: {figures['speedup']:.1f}x faster (target >= {payload['speedup_target']:.0f}x)",
        f"floor (the step's kernels alone) {figures['floor_tokens_per_s']:,.0f} tokens/s: "
        f"{figures['floor_speedup']:.1f}x over recompute, attnkit takes {figures['attnkit_over_floor']:.2f}x its time",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table and the throughput, write ``<out>/decoding.json``."""
    args = common.parse_args(argv, __doc__.splitlines()[0])
    rows, payload = run(args.quick, args.repeats)
    print(common.format_table(rows))
    print(format_throughput(payload))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
