"""Command options every task shares, and the helpers their commands use (layer 5; no torch at import).

The CLI mounts each task's options on its sub-commands; these are the groups they have in common (runtime,
training) and the readers of the texts a command is given (``--text``, ``--file`` or standard input).
"""

from __future__ import annotations

import argparse


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """``--seed``, ``--threads``, ``--no-progress``, ``--debug``."""
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--seed", type=int, default=0, help="random seed; a CPU run with the same seed repeats (default 0)"
    )
    group.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    group.add_argument("--no-progress", action="store_true", help="no progress bars")
    group.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")


def apply_runtime(args: argparse.Namespace) -> None:
    """Seed and thread settings, applied before any work."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)


def is_main_process() -> bool:
    """False on the non-zero ranks of a ``torchrun`` job (they stay quiet)."""
    import os

    return os.environ.get("RANK", "0") == "0"


def add_training_options(
    parser: argparse.ArgumentParser,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.0,
    patience: int | None = 3,
) -> argparse._ArgumentGroup:
    """The ``training`` options every ``attnkit train TASK`` shares; returns the group for the task's own."""
    fit = parser.add_argument_group("training")
    fit.add_argument("--epochs", type=int, default=epochs, help=f"(default {epochs})")
    fit.add_argument("--batch-size", type=int, default=batch_size, help=f"(default {batch_size})")
    fit.add_argument("--lr", type=float, default=lr, help=f"AdamW learning rate (default {lr:g})")
    fit.add_argument(
        "--lr-decay",
        type=float,
        default=1.0,
        help="multiply the learning rate by this after each epoch without improvement (default 1: constant)",
    )
    fit.add_argument(
        "--warmup-steps",
        type=int,
        default=0,
        help="raise the learning rate linearly over this many first steps (default 0; Transformers: ~4000)",
    )
    fit.add_argument("--weight-decay", type=float, default=weight_decay, help=f"(default {weight_decay:g})")
    fit.add_argument(
        "--patience",
        type=int,
        default=patience,
        help=f"early stopping patience in epochs (default {'off' if patience is None else patience})",
    )
    fit.add_argument("--max-minutes", type=float, default=None, help="time budget: stop cleanly after this long")
    fit.add_argument("--out", required=True, help="run directory (best/, last/, metrics.json)")
    fit.add_argument("--resume", action="store_true", help="continue from OUT/last")
    return fit


def fit_config_from_args(args: argparse.Namespace, **overrides):
    """The :class:`~attnkit.training.loop.FitConfig` the shared training options describe (plus ``overrides``)."""
    from attnkit.training.loop import FitConfig

    return FitConfig(
        epochs=args.epochs,
        lr=args.lr,
        lr_decay=args.lr_decay,
        warmup_steps=args.warmup_steps,
        weight_decay=args.weight_decay,
        patience=args.patience,
        seed=args.seed,
        progress=not args.no_progress,
        max_minutes=args.max_minutes,
        **overrides,
    )


def say(*values: object) -> None:
    """``print`` on the main process only (one report under ``torchrun``)."""
    if is_main_process():
        print(*values)


def read_texts(args: argparse.Namespace, *, keep_blank: bool = False) -> list[str]:
    """The input texts: ``--text`` values, the ``--file``'s lines, or standard input's.

    Blank lines are dropped unless ``keep_blank`` (translate keeps them so its output lines up with its input).

    Raises:
        ValueError: no text given, or a file that is not UTF-8 text.
    """
    import sys

    if getattr(args, "text", None):
        lines = list(args.text)
    elif getattr(args, "file", None):
        try:
            with open(args.file, encoding="utf-8") as handle:
                lines = handle.read().splitlines()
        except UnicodeDecodeError as error:
            raise ValueError(f"{args.file}: not UTF-8 text ({error.reason})") from None
    elif sys.stdin is None or sys.stdin.isatty():
        raise ValueError("no text given: use --text, --file or standard input")
    else:
        lines = sys.stdin.read().splitlines()
    if not any(line.strip() for line in lines):
        raise ValueError("no text given: use --text, --file or standard input")
    return lines if keep_blank else [line for line in lines if line.strip()]
