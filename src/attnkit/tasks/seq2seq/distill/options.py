"""The distillation options of ``attnkit train seq2seq`` and the :class:`Distillation` they describe (layer 5; no
torch at import, so ``--help`` stays fast)."""

from __future__ import annotations

import argparse

from attnkit.tasks.options import positive_int

__all__ = ["ADDED_LATER", "BUILTIN", "EXAMPLES", "add_distill_arguments", "check_distill_arguments"]

# what a run started before these options existed holds (attnkit.tasks.run.plan compares a resumed run's settings)
ADDED_LATER = {"distill_from": None, "distill_beam": None, "distill_gold": False, "distill_unlabelled": None,
               "distill_max_unlabelled": None, "distill_token_weight": None}  # fmt: skip
DEFAULT_BEAM = 5
BUILTIN = "builtin"  # --distill-unlabelled builtin: English words of the built-in text data sets
EXAMPLES = """\
  attnkit train seq2seq --data cmudict --distill-from g2p runs/g2p-lstm runs/g2p-tf --out runs/student
      a student trained on the beam-5 outputs of an ensemble of three teachers for the training words
  attnkit train seq2seq --data cmudict --distill-from g2p --distill-gold --distill-unlabelled builtin \\
      --distill-max-unlabelled 20000 --out runs/student    gold pairs too, and 20,000 words only the teacher labels
"""


def add_distill_arguments(parser: argparse.ArgumentParser) -> None:
    """``--distill-from``, ``--distill-beam``, ``--distill-gold``, ``--distill-unlabelled``,
    ``--distill-max-unlabelled``."""
    group = parser.add_argument_group(
        "distillation (sequence-level, Kim & Rush 2016: the student learns the teachers' beam outputs; they are "
        "decoded once and kept under $ATTNKIT_CACHE/teachers/, so a killed or resumed run does not decode again)"
    )
    group.add_argument(
        "--distill-from",
        nargs="+",
        default=None,
        metavar="CHECKPOINT",
        help="teacher checkpoints, run directories or shipped names (g2p); several decode as an ensemble, as "
        "`attnkit evaluate --checkpoint A B` does. Their vocabularies must be the student's",
    )
    group.add_argument(
        "--distill-beam", type=positive_int, default=None, metavar="N", help="the teachers' beam (default 5; 1 greedy)"
    )
    group.add_argument(
        "--distill-gold",
        action="store_true",
        help="train on the gold pairs as well as on the teachers' outputs (default: the teachers' outputs only)",
    )
    group.add_argument(
        "--distill-token-weight",
        type=_weight,
        default=None,
        metavar="W",
        help="token-level distillation too: the loss is (1-W) x cross-entropy on the training targets + W x "
        "cross-entropy against the teachers' next-token distributions (they run along in training; default: off)",
    )
    group.add_argument(
        "--distill-unlabelled",
        default=None,
        metavar="FILE|builtin",
        help="more sources, with no gold, for the teachers to label: a file (one a line), or builtin: English words "
        "of the built-in text data sets (fine-foods, r8, r52, 20ng); never a source of the data's splits",
    )
    group.add_argument(
        "--distill-max-unlabelled",
        type=positive_int,
        default=None,
        metavar="N",
        help="at most N unlabelled sources, a sample drawn with --seed (default: all)",
    )


def _weight(value: str) -> float:
    """``--distill-token-weight``: a number in (0, 1]."""
    try:
        weight = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {value!r}") from None
    if not 0.0 < weight <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {value!r}")
    return weight


def check_distill_arguments(args: argparse.Namespace, *, streamed: bool) -> None:
    """Refuse distillation options without ``--distill-from``, and distillation of a streamed or torchrun run."""
    import os

    if args.distill_from is None:
        given = [
            f"--{dest.replace('_', '-')}" for dest, default in ADDED_LATER.items() if getattr(args, dest) != default
        ]
        if given:
            raise ValueError(f"{', '.join(given)}: needs --distill-from (the teachers)")
        return
    if args.distill_max_unlabelled is not None and args.distill_unlabelled is None:
        raise ValueError("--distill-max-unlabelled: needs --distill-unlabelled (FILE or builtin)")
    if streamed:
        raise ValueError("--distill-from: trains on data read in memory; give --streaming never (or a smaller file)")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("--distill-from: runs in one process, not under torchrun")
