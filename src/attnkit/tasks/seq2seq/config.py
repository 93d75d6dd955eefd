"""The seq2seq checkpoint's config (``config.json``: ``"kind": "seq2seq"`` plus :class:`Seq2SeqConfig`) (layer 5).

It stores names; :func:`~attnkit.tasks.seq2seq.scoring.scoring_named` and
:func:`~attnkit.models.seq2seq.build_seq2seq` map them to objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from attnkit.tasks.seq2seq.scoring import scoring_named
from attnkit.training.config_io import JsonConfig

__all__ = ["KIND", "Seq2SeqConfig"]

KIND = "seq2seq"


@dataclass
class Seq2SeqConfig(JsonConfig):
    """What a seq2seq checkpoint's ``config.json`` holds besides ``"kind"``.

    Attributes:
        model: :func:`~attnkit.models.seq2seq.build_seq2seq`'s config, vocabulary sizes included.
        data: the built-in data set name, or the training file as given.
        metrics: the name of the decoded outputs' :class:`~attnkit.tasks.seq2seq.scoring.Scoring`: ``"sequence"``
            (WER/PER) or ``"text"`` (BLEU/chrF).
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
        scoring_named(self.metrics)  # an unknown name fails here, naming the known ones
        check_model_types(self.model)


def check_model_types(model: dict[str, Any]) -> None:
    """Refuse a model config whose options have the wrong JSON type (``"dim": "32"``), naming the field; the
    types are those of the model family's constructor (``build_rnn_seq2seq``, ``TransformerSeq2Seq``). Unknown
    options are left to :func:`~attnkit.models.seq2seq.build_seq2seq`, which names them.

    Raises:
        ValueError: ``seq2seq config field 'model.dim' must be an integer, got '32' (str)``.
    """
    import typing

    from attnkit.models.seq2seq import SEQ2SEQ_MODELS
    from attnkit.training.config_io import value_problem

    family = model.get("model")
    if family is None:  # build_seq2seq names the missing key
        return
    if not isinstance(family, str) or family not in SEQ2SEQ_MODELS:
        raise ValueError(
            f"seq2seq config field 'model.model' must be one of {', '.join(SEQ2SEQ_MODELS)}, got {family!r}"
        )
    builder = SEQ2SEQ_MODELS[family]
    hints = typing.get_type_hints(builder.__init__ if isinstance(builder, type) else builder)
    for key, value in model.items():
        problem = None if key == "model" or key not in hints else value_problem(value, hints[key], where=f"model.{key}")
        if problem is not None:
            raise ValueError(f"seq2seq config field {problem}")
