"""The seq2seq checkpoint's config (``config.json``: ``"kind": "seq2seq"`` plus :class:`Seq2SeqConfig`) and how a
task's outputs are scored and selected (layer 5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnkit.data.seq2seq import Seq2SeqData
from attnkit.training.config_io import JsonConfig

__all__ = ["KIND", "METRIC_KINDS", "SELECTION", "Seq2SeqConfig", "metric_kind"]

KIND = "seq2seq"
METRIC_KINDS = ("sequence", "text")
SELECTION = {"sequence": ("wer", "min"), "text": ("bleu", "max")}  # metric kind -> (select_metric, select_mode)


def metric_kind(data: Seq2SeqData) -> str:
    """``"text"`` for tasks whose targets are subword text (translation), else ``"sequence"``."""
    return "text" if data.target_level == "subword" else "sequence"


@dataclass
class Seq2SeqConfig(JsonConfig):
    """What a seq2seq checkpoint's ``config.json`` holds besides ``"kind"``.

    Attributes:
        model: :func:`~attnkit.models.seq2seq.build_seq2seq`'s config, vocabulary sizes included.
        data: the built-in task name, or the training file as given.
        metrics: ``"sequence"`` (WER/PER) or ``"text"`` (BLEU/chrF).
        source_level, target_level: how each side was tokenised (``char``, ``symbol``, ``subword``).
        label_smoothing: of the training loss.
    """

    kind_name: ClassVar[str] = "seq2seq config"

    model: dict[str, Any]
    data: str = ""
    metrics: str = "sequence"
    source_level: str = "char"
    target_level: str = "char"
    label_smoothing: float = 0.1

    def __post_init__(self) -> None:
        if self.metrics not in METRIC_KINDS:
            raise ValueError(f"metrics must be one of {METRIC_KINDS}, got {self.metrics!r}")
