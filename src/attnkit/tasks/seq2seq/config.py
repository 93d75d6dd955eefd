"""The seq2seq checkpoint's config (``config.json``: ``"kind": "seq2seq"`` plus :class:`Seq2SeqConfig`) (layer 5).

It stores names; :func:`~attnkit.tasks.seq2seq.scoring.scoring_named` and
:func:`~attnkit.models.seq2seq.build_seq2seq` map them to objects."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, ClassVar

from attnkit.checkpointing.config_io import JsonConfig
from attnkit.tasks.seq2seq.scoring import scoring_named

__all__ = ["KIND", "Seq2SeqConfig", "build_seq2seq_model", "config_from_args", "model_options"]

KIND = "seq2seq"


@dataclass
class Seq2SeqConfig(JsonConfig):
    """What a seq2seq checkpoint's ``config.json`` holds besides ``"kind"``.

    ``model`` is :func:`~attnkit.models.seq2seq.build_seq2seq`'s config, vocabulary sizes included; ``metrics`` the
    name of a :class:`~attnkit.tasks.seq2seq.scoring.Scoring`; ``distillation`` how a distilled student was taught
    (None: on the gold; :func:`~attnkit.tasks.seq2seq.distill.student.provenance`).
    """

    kind_name: ClassVar[str] = "seq2seq config"

    model: dict[str, Any]
    data: str = ""
    metrics: str = "sequence"
    source_level: str = "char"
    target_level: str = "char"
    label_smoothing: float = 0.1
    distillation: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        scoring_named(self.metrics)  # an unknown name fails here, naming the known ones
        check_model_types(self.model)


def check_model_types(model: dict[str, Any]) -> None:
    """Refuse a model config whose options have the wrong JSON type (``"dim": "32"``) for the model family's
    constructor, naming the field; unknown options are left to :func:`~attnkit.models.seq2seq.build_seq2seq`."""
    import typing

    from attnkit.checkpointing.config_io import value_problem
    from attnkit.models.seq2seq import SEQ2SEQ_MODELS

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


def build_seq2seq_model(config: Seq2SeqConfig):
    """The untrained model ``config`` describes (:func:`~attnkit.models.seq2seq.build_seq2seq`)."""
    from attnkit.models.seq2seq import build_seq2seq

    return build_seq2seq(config.model)


def config_from_args(args: argparse.Namespace, init=None) -> Seq2SeqConfig:
    """The config ``attnkit train seq2seq``'s options describe (vocabulary sizes, metric kind and levels are
    filled in by training); with ``init`` (an ``--init-from`` checkpoint), the checkpoint's model."""
    if init is None:
        model = model_options(args)
        check_model_options(model)
    else:  # the checkpoint's model, vocabulary sizes aside (its tokenisers bring them)
        vocabulary = ("source_vocab_size", "target_vocab_size")
        model = {key: value for key, value in init.config["model"].items() if key not in vocabulary}
    levels = {"source_level": args.source_level, "target_level": args.target_level}
    return Seq2SeqConfig(model=model, data=args.data, label_smoothing=args.label_smoothing, **levels)


# option dest -> (family it belongs to, build_seq2seq key); None values are left to the model's defaults
RNN_OPTIONS = {
    "attention": "attention",
    "cell": "cell",
    "embed_dim": "embed_dim",
    "hidden": "hidden_dim",
    "layers": "num_layers",
    "window": "window",
    "local_score": "local_score",
}
TRANSFORMER_OPTIONS = {
    name: name for name in ("dim", "heads", "encoder_layers", "decoder_layers", "ff_dim", "positions")
}


# A store_true flag of one family -> (build_seq2seq key, the value it sets)
FAMILY_FLAGS = {
    "rnn": {"unidirectional": ("bidirectional", False)},
    "transformer": {"post_norm": ("norm_first", False), "share_embeddings": ("share_embeddings", True)},
}
FAMILY_OPTIONS = {"rnn": RNN_OPTIONS, "transformer": TRANSFORMER_OPTIONS}


def model_options(args: argparse.Namespace) -> dict:
    """The ``build_seq2seq`` config the arguments describe (vocabulary sizes are added by training); an option of
    the other model family (``--attention`` with ``--model transformer``) is refused."""
    for family in FAMILY_OPTIONS.keys() - {args.model}:
        stray = [dest for dest in FAMILY_OPTIONS[family] if getattr(args, dest) is not None]
        stray += [dest for dest in FAMILY_FLAGS[family] if getattr(args, dest)]
        if stray:
            names = ", ".join("--" + dest.replace("_", "-") for dest in stray)
            raise ValueError(f"{names}: option(s) of --model {family}, not of --model {args.model}")
    options: dict = {"model": args.model}
    own = FAMILY_OPTIONS[args.model]
    options.update({key: getattr(args, dest) for dest, key in own.items() if getattr(args, dest) is not None})
    options.update({key: value for dest, (key, value) in FAMILY_FLAGS[args.model].items() if getattr(args, dest)})
    if args.dropout is not None:
        options["dropout"] = args.dropout
    return options


def check_model_options(options: dict) -> None:
    """Build the model ``options`` describe on a two-token vocabulary (cheap), so a bad combination (heads that do
    not divide the model size, ...) is refused before anything is read or written."""
    from attnkit.models.seq2seq import build_seq2seq

    build_seq2seq({**options, "source_vocab_size": 6, "target_vocab_size": 6})
