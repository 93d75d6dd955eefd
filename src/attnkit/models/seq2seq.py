"""Build a sequence-to-sequence model from a JSON-ready config (what checkpoints store and the CLI passes).

    config = {"model": "rnn", "source_vocab_size": 60, "target_vocab_size": 15, "attention": "bahdanau"}
    model = build_seq2seq(config)

``"model"`` is ``"rnn"`` (options of :func:`~attnkit.models.rnn_seq2seq.build_rnn_seq2seq`) or
``"transformer"`` (options of :func:`~attnkit.models.transformer.seq2seq.build_transformer_seq2seq`); every other key
is one of those keyword options. Unknown keys are refused by name, so a typo never silently trains a default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from attnkit.models.rnn_seq2seq import build_rnn_seq2seq
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq

__all__ = ["SEQ2SEQ_MODELS", "build_seq2seq", "seq2seq_options"]

SEQ2SEQ_MODELS: dict[str, Callable[..., nn.Module]] = {
    "rnn": build_rnn_seq2seq,
    "transformer": build_transformer_seq2seq,
}
_REQUIRED = ("source_vocab_size", "target_vocab_size")


def seq2seq_options(model: str) -> dict[str, Any]:
    """The options of model family ``model`` with their defaults (the vocabulary sizes have none)."""
    if model not in SEQ2SEQ_MODELS:
        raise ValueError(f"config['model'] must be one of {', '.join(SEQ2SEQ_MODELS)}, got {model!r}")
    parameters = inspect.signature(SEQ2SEQ_MODELS[model]).parameters
    return {
        name: None if p.default is inspect.Parameter.empty else p.default
        for name, p in parameters.items()
        if name != "self"
    }


def build_seq2seq(config: Mapping[str, Any]) -> nn.Module:
    """A freshly initialised :class:`RNNSeq2Seq` or :class:`TransformerSeq2Seq` as ``config`` describes.

    Raises:
        ValueError: no or an unknown ``"model"``, missing vocabulary sizes, or keys the family does not take.
    """
    if "model" not in config:
        raise ValueError(f"config needs a 'model' key ({' or '.join(SEQ2SEQ_MODELS)}); got keys {sorted(config)}")
    options = {key: value for key, value in config.items() if key != "model"}
    known = seq2seq_options(config["model"])
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"unknown {config['model']} seq2seq option(s): {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    missing = [name for name in _REQUIRED if name not in options]
    if missing:
        raise ValueError(f"config is missing {', '.join(missing)}")
    return SEQ2SEQ_MODELS[config["model"]](**options)
