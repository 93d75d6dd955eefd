"""Dynamic int8 quantisation of a trained model for CPU inference (layer 4): ``--quantize int8``.

    model = quantize_model(model.eval(), "int8")   # a quantised copy; the float model is left as it was

Every ``nn.Linear`` becomes torch's dynamically quantised linear layer (``torch.ao.quantization.quantize_dynamic``
with per-output-channel int8 weights; activations are quantised per call, the products accumulate in int32 and
come back in float32): attention projections, feed-forward layers and the output projection. Embeddings, LayerNorms,
recurrent cells and the attention itself stay float32. This is the scheme of CTranslate2's ``int8`` export, run
by PyTorch's own x86/fbgemm kernels, for users who do not export. Its speed-up is measured by
``bench.decoding_runtimes`` (not yet on a quiet machine: ``docs/benchmarks.md``), its accuracy cost like
CTranslate2's (``attnkit experiment deploy``). It never equals float32 token for token (near-ties go the other
way), and since each call's activations are scaled by that call's range, an output can depend on the other rows of
its batch (padding included) and on whether the prefix is recomputed or cached: the tests compare int8's fast paths
with its reference paths on the same rows, and int8 with float32 within a tolerance. In the RNN the output
projection is the only layer that sees other rows when cached (a step ``[B, D]`` against the prefix ``[B, t, D]``
when recomputed): in int8 its cached logits differ from recomputation's by ~2% of their scale, enough to flip
near-ties in greedy decoding; in float32 the two are equal (``tests/models/test_quantize.py``).

The fast paths that read a projection's ``weight`` in place (packed q/k/v, the decoder's transposed output weight)
see that a quantised layer holds no float weight (:func:`is_quantized`) and call the layers instead; the
Transformer's fast decoding step calls the layers' own int8 kernel on their packed weights
(:class:`attnkit.models.transformer.fast_linear.Int8Linear`), which gives the layers' very values.
``torch.ao.quantization`` warns that it is deprecated in favour of the ``torchao`` package; its kernels are still
torch 2.13's, and the warning is silenced here (``torchao`` would pull in another torch build).
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

__all__ = ["QUANTIZATIONS", "is_quantized", "quantize_model"]

QUANTIZATIONS = ("int8",)


def is_quantized(linear: nn.Module) -> bool:
    """True for a quantised linear layer: its ``weight`` is a method, not a float tensor to read in place."""
    return not isinstance(getattr(linear, "weight", None), torch.Tensor)


def quantize_model(model: nn.Module, scheme: str = "int8") -> nn.Module:
    """A copy of ``model`` (eval mode, on the CPU, float32) with every ``nn.Linear`` dynamically quantised.

    Raises:
        ValueError: an unknown ``scheme``, a model that is not on the CPU, or weights that are not float32.
    """
    if scheme not in QUANTIZATIONS:
        raise ValueError(f"quantize must be one of {QUANTIZATIONS}, got {scheme!r}")
    for name, parameter in model.named_parameters():
        if parameter.device.type != "cpu" or parameter.dtype != torch.float32:
            raise ValueError(
                f"--quantize {scheme} runs float32 models on the CPU; {name} is {parameter.dtype} on {parameter.device}"
            )
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    model = copy.deepcopy(model).eval()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*quantize_per_.*deprecated", category=UserWarning)
        return quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
