"""attnkit's :class:`~attnkit.models.transformer.seq2seq.TransformerSeq2Seq` as a CTranslate2 ``TransformerSpec``.

The weight mapping behind :func:`attnkit.tasks.seq2seq.ctranslate2.export.export_ctranslate2`, kept apart from the files
and the manifest. One attnkit layer becomes one CTranslate2 layer, name for name:

    attnkit                                      CTranslate2 (``encoder/`` or ``decoder/``)
    source_embedding / target_embedding          embeddings[0] / embeddings  (both scale by √D)
    source_positions / target_positions          position_encodings.encodings (the table, set explicitly)
    *.norm_attention, norm_self                  layer[i].self_attention.layer_norm
    self-attention q_proj, k_proj, v_proj        layer[i].self_attention.linear[0]   (fused [3D, D])
    self-attention out_proj                      layer[i].self_attention.linear[1]
    norm_cross / cross q_proj                    layer[i].attention.layer_norm / .linear[0]
    cross k_proj, v_proj / out_proj              layer[i].attention.linear[1] (fused [2D, D]) / .linear[2]
    norm_ff, feed_forward[0], feed_forward[3]    layer[i].ffn.layer_norm, .linear_0, .linear_1
    encoder_norm / decoder_norm (pre-norm)       layer_norm
    output                                       decoder/projection

Sinusoidal and learned positions become an explicit ``[P, D]`` table (attnkit's sinusoids interleave sin/cos,
CTranslate2's concatenate them); rotary positions become ``rotary_dim=0``, ``rotary_interleave=True``. CTranslate2
needs at least one layer per stack: an empty pre-norm stack gets one **identity layer** (zero projections:
``x + 0 = x`` exactly); an empty post-norm one cannot (``norm(x + 0) ≠ x``) and is refused.

Shape glossary: V vocabulary, D model size, F feed-forward size, P positions in the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from attnkit.distributions import Softmax
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq
from attnkit.multihead import MultiHeadAttention
from attnkit.positions import LearnedPositions, RotaryPositions, SinusoidalPositions, sinusoidal_table
from attnkit.scores import ScaledDotScore

__all__ = ["ACTIVATIONS", "describe_transformer", "transformer_spec"]

ACTIVATIONS = {"relu": "RELU", "gelu": "GELU", "gelu_tanh": "GELUTanh"}  # attnkit name -> ctranslate2 Activation


def _array(tensor: torch.Tensor) -> np.ndarray:
    """A float32 numpy copy (CTranslate2 quantises its arrays in place: never hand it the model's memory)."""
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


def _activation_name(module: nn.Module) -> str:
    if type(module) is nn.ReLU:
        return "relu"
    if type(module) is nn.GELU:
        return "gelu_tanh" if module.approximate == "tanh" else "gelu"
    raise ValueError(f"export supports ReLU and GELU feed-forward activations, got {type(module).__name__}")


def _layers(model: TransformerSeq2Seq) -> list[nn.Module]:
    return [*model.encoder_layers, *model.decoder_layers]


def _rotary_base(model: TransformerSeq2Seq) -> float:
    """The base of the rotary positions (all alike), recovered from their frequencies and checked."""
    rotaries = [m for m in model.modules() if isinstance(m, RotaryPositions)]
    inv_freq = rotaries[0].inv_freq.double()  # [Dh/2]
    head_dim = 2 * inv_freq.numel()
    base = float(inv_freq[1] ** (-head_dim / 2)) if inv_freq.numel() > 1 else 10000.0
    expected = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if any(not torch.allclose(r.inv_freq.double(), expected, rtol=1e-5) for r in rotaries):
        raise ValueError("export needs the same standard rotary frequencies in every layer")
    return round(base, 3)


def describe_transformer(model: TransformerSeq2Seq) -> dict[str, Any]:
    """The architecture of ``model`` as a JSON-ready dict (what the manifest records and hashes); ValueError for a
    model CTranslate2 cannot run as it is."""
    from attnkit.models.rnn_seq2seq import RNNSeq2Seq

    if isinstance(model, RNNSeq2Seq):
        raise ValueError("export supports Transformer models (got an RNN seq2seq)")
    if not isinstance(model, TransformerSeq2Seq):
        raise ValueError(f"export supports Transformer models (got {type(model).__name__})")
    layers = _layers(model)
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if any(type(a.score) is not ScaledDotScore or type(a.distribution) is not Softmax for a in attentions):
        raise ValueError("export supports scaled dot-product attention with softmax only")
    norms = [m for m in model.modules() if isinstance(m, nn.LayerNorm)]
    if len({m.eps for m in norms}) > 1 or any(not m.elementwise_affine for m in norms):
        raise ValueError("export needs every LayerNorm affine and with one epsilon")
    norm_first = isinstance(model.encoder_norm, nn.LayerNorm)
    if any(layer.norm_first != norm_first for layer in layers):
        raise ValueError("export needs every layer pre-norm or every layer post-norm")
    if not norm_first and (not model.encoder_layers or not model.decoder_layers):
        raise ValueError(
            "CTranslate2 needs at least one encoder and one decoder layer; a post-norm model with none cannot be "
            "padded with an identity layer"
        )
    activations = {_activation_name(layer.feed_forward[1]) for layer in layers}
    if len(activations) > 1:
        raise ValueError(f"export needs one feed-forward activation, got {sorted(activations)}")
    ff_dim = layers[0].feed_forward[0].out_features if layers else 4 * model.dim
    positions = model.position_scheme.name
    if positions == "sinusoidal":
        for module in (model.source_positions, model.target_positions):
            if not isinstance(module, SinusoidalPositions) or module.input_scale != 1.0:
                raise ValueError("export expects the model's own sinusoidal positions (no input scale)")
    return {
        "model": "transformer",
        "source_vocab_size": model.source_embedding.num_embeddings,
        "target_vocab_size": model.target_embedding.num_embeddings,
        "dim": model.dim,
        "heads": model.heads,
        "encoder_layers": len(model.encoder_layers),
        "decoder_layers": len(model.decoder_layers),
        "ff_dim": ff_dim,
        "norm_first": norm_first,
        "positions": positions,
        "positions_base": _positions_base(model, positions),
        "max_len": model.source_positions.embedding.num_embeddings if positions == "learned" else None,
        "share_embeddings": model.source_embedding is model.target_embedding,
        "tie_output": model.output.weight is model.target_embedding.weight,
        "output_bias": model.output.bias is not None,
        "activation": activations.pop() if activations else "gelu",
        "layer_norm_eps": norms[0].eps if norms else 1e-5,
    }


def _positions_base(model: TransformerSeq2Seq, positions: str) -> float | None:
    """The base of the sinusoidal or rotary positions' frequencies (None for learned positions)."""
    if positions == "sinusoidal":
        return model.source_positions.base
    return _rotary_base(model) if positions == "rotary" else None


def _set_norm(spec: Any, norm: nn.LayerNorm | None, dim: int) -> None:
    spec.gamma = _array(norm.weight) if norm is not None else np.ones(dim, np.float32)
    has_bias = norm is not None and norm.bias is not None
    spec.beta = _array(norm.bias) if has_bias else np.zeros(dim, np.float32)


def _set_linear(spec: Any, weights: list[torch.Tensor], biases: list[torch.Tensor | None]) -> None:
    """``spec`` = the rows of ``weights`` stacked (one fused projection), with their biases if any."""
    spec.weight = _array(torch.cat(weights))  # [sum of out, in]
    if all(b is not None for b in biases):
        spec.bias = _array(torch.cat(biases))


def _set_attention(spec: Any, attention: MultiHeadAttention, norm: nn.LayerNorm, *, cross: bool) -> None:
    q, k, v, out = attention.q_proj, attention.k_proj, attention.v_proj, attention.out_proj
    _set_norm(spec.layer_norm, norm, attention.embed_dim)
    if cross:
        _set_linear(spec.linear[0], [q.weight], [q.bias])
        _set_linear(spec.linear[1], [k.weight, v.weight], [k.bias, v.bias])  # [2D, D]
        _set_linear(spec.linear[2], [out.weight], [out.bias])
    else:
        _set_linear(spec.linear[0], [q.weight, k.weight, v.weight], [q.bias, k.bias, v.bias])  # [3D, D]
        _set_linear(spec.linear[1], [out.weight], [out.bias])


def _set_ffn(spec: Any, layer: nn.Module, norm: nn.LayerNorm) -> None:
    first, second = layer.feed_forward[0], layer.feed_forward[3]
    _set_norm(spec.layer_norm, norm, first.in_features)
    _set_linear(spec.linear_0, [first.weight], [first.bias])  # [F, D]
    _set_linear(spec.linear_1, [second.weight], [second.bias])  # [D, F]


def _zero_linear(spec: Any, rows: int, cols: int) -> None:
    spec.weight, spec.bias = np.zeros((rows, cols), np.float32), np.zeros(rows, np.float32)


def _set_identity_layer(spec: Any, dim: int, ff_dim: int, *, cross: bool) -> None:
    """A pre-norm layer that returns its input exactly: every projection (and bias) is zero, so each residual
    branch adds exactly 0."""
    _set_norm(spec.self_attention.layer_norm, None, dim)
    _zero_linear(spec.self_attention.linear[0], 3 * dim, dim)
    _zero_linear(spec.self_attention.linear[1], dim, dim)
    if cross:
        _set_norm(spec.attention.layer_norm, None, dim)
        for linear, rows in zip(spec.attention.linear, (dim, 2 * dim, dim), strict=True):
            _zero_linear(linear, rows, dim)
    _set_norm(spec.ffn.layer_norm, None, dim)
    _zero_linear(spec.ffn.linear_0, ff_dim, dim)
    _zero_linear(spec.ffn.linear_1, dim, ff_dim)


def _position_table(positions: nn.Module | None, rows: int, dim: int, base: float | None) -> np.ndarray:
    if isinstance(positions, LearnedPositions):
        return _array(positions.embedding.weight)  # [P, D]
    return _array(sinusoidal_table(rows, dim, base=base))  # [P, D], sin/cos interleaved as attnkit adds them


def transformer_spec(
    model: TransformerSeq2Seq, source_tokens: list[str], target_tokens: list[str], *, max_positions: int
) -> tuple[Any, dict[str, Any]]:
    """``(TransformerSpec with every weight set and both vocabularies registered, description)``; the model's weights
    are copied, never modified. The description (:func:`describe_transformer`) gains ``"identity_layers"`` and
    ``"max_positions"`` (rows of a sinusoidal table)."""
    description = describe_transformer(model)
    encoder_layers, decoder_layers = list(model.encoder_layers), list(model.decoder_layers)
    spec, encoder, decoder = _empty_spec(description, len(encoder_layers), len(decoder_layers))
    encoder.embeddings[0].weight = _array(model.source_embedding.weight)  # [V_src, D]
    decoder.embeddings.weight = _array(model.target_embedding.weight)  # [V_tgt, D]
    positions, dim = description["positions"], description["dim"]
    rows = description["max_len"] if positions == "learned" else max_positions
    if positions != "rotary":
        base = description["positions_base"]
        encoder.position_encodings.encodings = _position_table(model.source_positions, rows, dim, base)
        decoder.position_encodings.encodings = _position_table(model.target_positions, rows, dim, base)
    identity = _set_layers(encoder, decoder, model, description)
    decoder.projection.weight = _array(model.output.weight)  # [V_tgt, D]
    if model.output.bias is not None:
        decoder.projection.bias = _array(model.output.bias)
    spec.register_source_vocabulary(list(source_tokens))
    spec.register_target_vocabulary(list(target_tokens))
    description.update(identity_layers=identity, max_positions=None if positions == "rotary" else rows)
    return spec, description


def _empty_spec(description: dict[str, Any], encoder_layers: int, decoder_layers: int) -> tuple[Any, Any, Any]:
    """``(TransformerSpec, its encoder spec, its decoder spec)`` shaped as ``description`` says, no weight set yet."""
    from ctranslate2.specs import common_spec
    from ctranslate2.specs import transformer_spec as ct2

    rotary = {"rotary_dim": 0, "rotary_interleave": True, "rotary_base": description["positions_base"]}
    options = {
        "pre_norm": description["norm_first"],
        "activation": getattr(common_spec.Activation, ACTIVATIONS[description["activation"]]),
        **(rotary if description["positions"] == "rotary" else {}),
    }
    encoder = ct2.TransformerEncoderSpec(max(1, encoder_layers), description["heads"], **options)
    decoder = ct2.TransformerDecoderSpec(max(1, decoder_layers), description["heads"], **options)
    spec = ct2.TransformerSpec(encoder, decoder)
    # attnkit's decoders start from <bos>; sources carry no specials
    spec.config.layer_norm_epsilon = description["layer_norm_eps"]
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = "<unk>", "<bos>", "<eos>"
    spec.config.decoder_start_token, spec.config.add_source_bos, spec.config.add_source_eos = "<bos>", False, False
    return spec, encoder, decoder


def _set_layers(encoder: Any, decoder: Any, model: TransformerSeq2Seq, description: dict[str, Any]) -> dict[str, int]:
    """Copy every layer's weights (and a pre-norm model's final norms) into the specs; an empty stack's one layer
    becomes an identity. Returns which stacks are identities (``{"encoder": 0|1, ...}``)."""
    dim, ff_dim = description["dim"], description["ff_dim"]
    encoder_layers, decoder_layers = list(model.encoder_layers), list(model.decoder_layers)
    for layer_spec, layer in zip(encoder.layer, encoder_layers, strict=False):
        _set_attention(layer_spec.self_attention, layer.attention, layer.norm_attention, cross=False)
        _set_ffn(layer_spec.ffn, layer, layer.norm_ff)
    for layer_spec, layer in zip(decoder.layer, decoder_layers, strict=False):
        _set_attention(layer_spec.self_attention, layer.self_attention, layer.norm_self, cross=False)
        _set_attention(layer_spec.attention, layer.cross_attention, layer.norm_cross, cross=True)
        _set_ffn(layer_spec.ffn, layer, layer.norm_ff)
    if not encoder_layers:
        _set_identity_layer(encoder.layer[0], dim, ff_dim, cross=False)
    if not decoder_layers:
        _set_identity_layer(decoder.layer[0], dim, ff_dim, cross=True)
    if description["norm_first"]:
        _set_norm(encoder.layer_norm, model.encoder_norm, dim)
        _set_norm(decoder.layer_norm, model.decoder_norm, dim)
    return {"encoder": int(not encoder_layers), "decoder": int(not decoder_layers)}
