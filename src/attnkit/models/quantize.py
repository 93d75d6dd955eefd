"""Dynamic int8 quantisation of a trained model for CPU inference (layer 4): ``--quantize int8``.

    model = quantize_model(model.eval(), "int8")   # a quantised copy; the float model is left as it was

Every ``nn.Linear`` becomes torch's dynamically quantised linear (``quantize_dynamic``: per-output-channel int8
weights, activations quantised per call, int32 accumulation, float32 out); embeddings, LayerNorms, recurrent cells
and the attention stay float32. This is CTranslate2's ``int8`` scheme on PyTorch's fbgemm kernels, for users who do
not export; its speed is in ``docs/benchmarks.md`` (``bench.decoding_runtimes``).

It never equals float32 token for token (near-ties go the other way), and since each call's activations are scaled
by that call's range, an output can depend on the other rows of its batch (padding included) and on whether the
prefix is cached: in the RNN, int8's cached logits differ from recomputation's by ~2% of their scale, enough to
flip greedy near-ties (float32: equal; ``tests/models/test_quantize.py``). Fast paths that read a ``weight`` in
place call the layer when :func:`is_quantized`; the Transformer's fast step calls the layers' own int8 kernel
(:class:`~attnkit.models.transformer.fast_linear.Int8Linear`). ``torch.ao.quantization``'s deprecation warning is
silenced (``torchao`` would pull in another torch build).
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
