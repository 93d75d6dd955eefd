"""Options and helpers shared by several subcommands."""

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


def add_data_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--data``, ``--test``, ``--text-column``, ``--label-column``."""
    group = parser.add_argument_group("data")
    group.add_argument(
        "--data",
        required=required,
        help="a built-in dataset (20ng, r8, r52, fine-foods, bbc) or a CSV/TSV/JSONL training file",
    )
    group.add_argument("--test", default=None, help="a test file, for --data FILE")
    group.add_argument("--text-column", default="text", help="column/key holding the text (default: text)")
    group.add_argument("--label-column", default="label", help="column/key holding the label (default: label)")


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
        "--schedule",
        choices=("plateau", "inverse-sqrt", "cosine"),
        default="plateau",
        help="learning rate after the warm-up: 'plateau' keeps it, times --lr-decay after each epoch without "
        "improvement (default); 'inverse-sqrt' decays it as lr*sqrt(warmup/step); 'cosine' anneals it to --min-lr "
        "over the --max-minutes budget (give enough --epochs, and --patience, for the budget to end the run), "
        "or over --epochs without one",
    )
    fit.add_argument(
        "--lr-decay",
        type=float,
        default=1.0,
        help="plateau schedule: multiply the learning rate by this after each epoch without improvement "
        "(default 1: constant)",
    )
    fit.add_argument(
        "--min-lr", type=float, default=0.0, help="cosine schedule: the learning rate it ends at (default 0)"
    )
    fit.add_argument(
        "--warmup-steps",
        type=int,
        default=0,
        help="raise the learning rate linearly over this many first steps (default 0; Transformers: ~4000)",
    )
    fit.add_argument(
        "--accumulate",
        type=int,
        default=1,
        help="sum the gradients of this many batches per optimiser step: an effective batch of "
        "--batch-size x ACCUMULATE (default 1)",
    )
    fit.add_argument(
        "--average-last",
        type=int,
        default=1,
        help="validate and keep the average of the weights of the last K epochs (checkpoint averaging; "
        "default 1: each epoch's own)",
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
        schedule=args.schedule,
        lr_decay=args.lr_decay,
        min_lr=args.min_lr,
        warmup_steps=args.warmup_steps,
        accumulate=args.accumulate,
        average_last=args.average_last,
        weight_decay=args.weight_decay,
        patience=args.patience,
        seed=args.seed,
        progress=not args.no_progress,
        max_minutes=args.max_minutes,
        **overrides,
    )
