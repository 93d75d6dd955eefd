"""Command options every task shares, and the helpers their commands use (layer 5; no torch at import).

The CLI mounts each task's options on its sub-commands; these are the groups they have in common (runtime,
training) and the readers of the texts a command is given (``--text``, ``--file`` or standard input).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from attnkit.runtime import PRECISIONS  # torch-free


def _number(kind: type, low: float, *, inclusive: bool = True):
    """An argparse ``type`` that parses ``kind`` and refuses values below ``low`` (or equal, if not inclusive)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            expected = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < low or (value == low and not inclusive) or value != value:  # NaN fails the last test
            raise argparse.ArgumentTypeError(f"must be {'>=' if inclusive else '>'} {low:g}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


DEVICE_HELP = (
    "where the model runs: auto (CUDA when available, else the CPU; auto never picks mps), cpu, cuda, cuda:N or "
    "mps (default auto)"
)
PRECISION_HELP = (
    "fp32 (default), or autocast to bf16 / fp16 (weights stay float32; fp16 training scales the loss with a "
    "GradScaler). They pay off on GPUs; on a CPU without native bf16/fp16 (AMX, AVX-512 BF16) they run slower "
    "than fp32"
)

positive_int = _number(int, 1)
non_negative_int = _number(int, 0)
positive_float = _number(float, 0.0, inclusive=False)
non_negative_float = _number(float, 0.0)


def valid_fraction(text: str) -> float:
    """An argparse ``type`` for ``--valid-fraction``: a share in [0, 1); 0 means no validation split."""
    value = non_negative_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1 (a share of the training split), got {text}")
    return value


DELIMITER_HELP = (
    "column separator of a CSV-like file, e.g. ';' or '|' ('\\t' or 'tab' for a tab): the file is read as CSV with "
    "it, whatever its suffix; default: from the suffix (.csv comma, .tsv tab)"
)


def delimiter_option(value: str) -> str:
    """``--delimiter``: one character; ``\\t`` and ``tab`` mean a tab."""
    value = "\t" if value in ("\\t", "tab") else value
    if len(value) != 1 or value in '\r\n"':
        raise argparse.ArgumentTypeError(f"must be one character (not a quote or line break), got {value!r}")
    return value


def add_device_options(group: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--device`` and ``--precision`` (every command that runs a model has them)."""
    group.add_argument("--device", default="auto", help=DEVICE_HELP)
    group.add_argument("--precision", choices=PRECISIONS, default="fp32", help=PRECISION_HELP)


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """``--device``, ``--precision``, ``--seed``, ``--threads``, ``--no-progress``, ``--debug``."""
    group = parser.add_argument_group("runtime")
    add_device_options(group)
    group.add_argument(
        "--seed", type=non_negative_int, default=0, help="random seed; a CPU run with the same seed repeats (default 0)"
    )
    group.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads (default: torch's choice)")
    group.add_argument("--no-progress", action="store_true", help="no progress bars")
    group.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")


def apply_runtime(args: argparse.Namespace) -> None:
    """Seed and thread settings, applied before any work; ``--device`` and ``--precision`` are checked here too, so
    a device this machine does not have is refused before anything is read or written."""
    import torch

    from attnkit.runtime.devices import check_precision, resolve_device

    if hasattr(args, "device"):
        check_precision(getattr(args, "precision", "fp32"), resolve_device(args.device))
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)


def is_main_process() -> bool:
    """False on the non-zero ranks of a ``torchrun`` job (they stay quiet)."""
    from attnkit.runtime.torchrun_env import torchrun_env

    return torchrun_env().is_main


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
    fit.add_argument("--epochs", type=positive_int, default=epochs, help=f"(default {epochs})")
    fit.add_argument("--batch-size", type=positive_int, default=batch_size, help=f"(default {batch_size})")
    fit.add_argument("--lr", type=positive_float, default=lr, help=f"AdamW learning rate (default {lr:g})")
    fit.add_argument(
        "--weight-decay", type=non_negative_float, default=weight_decay, help=f"(default {weight_decay:g})"
    )
    _add_schedule_options(fit)
    _add_budget_options(fit, patience)
    _add_run_directory_options(fit)
    return fit


def _add_schedule_options(fit: argparse._ArgumentGroup) -> None:
    """How the learning rate moves, and how many batches make a step or an average."""
    fit.add_argument(
        "--schedule",
        choices=("plateau", "inverse-sqrt", "cosine"),
        default="plateau",
        help="learning rate after the warm-up: 'plateau' keeps it, times --lr-decay after each epoch without "
        "improvement (default); 'inverse-sqrt' decays it as lr*sqrt(warmup/step); 'cosine' anneals it to --min-lr "
        "over --max-steps, else over the --max-minutes budget (give enough --epochs, and --patience, for the "
        "budget to end the run), else over --epochs",
    )
    fit.add_argument(
        "--lr-decay",
        type=positive_float,
        default=1.0,
        help="plateau schedule: multiply the learning rate by this after each epoch without improvement "
        "(default 1: constant)",
    )
    fit.add_argument(
        "--min-lr",
        type=non_negative_float,
        default=0.0,
        help="cosine schedule: the learning rate it ends at (default 0)",
    )
    fit.add_argument(
        "--warmup-steps",
        type=non_negative_int,
        default=0,
        help="raise the learning rate linearly over this many first steps (default 0). Scale it to the run: about a "
        "tenth of its steps (epochs x batches per epoch), e.g. ~30 for 300 examples at --batch-size 32 over 30 "
        "epochs; ~4000 is for Transformers on millions of examples. A warm-up over half the run is warned about",
    )
    fit.add_argument(
        "--accumulate",
        type=positive_int,
        default=1,
        help="sum the gradients of this many batches per optimiser step: an effective batch of "
        "--batch-size x ACCUMULATE (default 1)",
    )
    fit.add_argument(
        "--average-last",
        type=positive_int,
        default=1,
        help="validate and keep the average of the weights of the last K epochs (checkpoint averaging; "
        "default 1: each epoch's own)",
    )


def _add_budget_options(fit: argparse._ArgumentGroup, patience: int | None) -> None:
    """When a run stops: early stopping, a time budget, a step budget."""
    fit.add_argument(
        "--patience",
        type=positive_int,
        default=patience,
        help=f"early stopping patience in epochs (default {'off' if patience is None else patience})",
    )
    fit.add_argument(
        "--max-minutes",
        type=positive_float,
        default=None,
        help="time budget of the training itself, cumulative over the run: stop cleanly after this long, in the "
        "middle of an epoch if need be, saving last/ there (reading the data and building the vocabulary before "
        "the first step do not count; their time is printed and kept in metrics.json). With --resume it counts the "
        "minutes already spent: give the new total (e.g. 120 for a second hour), and the run does the rest of "
        "the epoch it stopped in",
    )
    fit.add_argument(
        "--save-every",
        type=positive_int,
        default=None,
        metavar="STEPS",
        help="also save OUT/last every this many optimiser steps, in the middle of an epoch too (replaced "
        "atomically), so that a run killed at any moment, kill -9 included, resumes with --resume at that step "
        "and ends with the weights of a run never stopped (default: at the end of each epoch only)",
    )
    fit.add_argument(
        "--save-every-minutes",
        type=positive_float,
        default=None,
        metavar="MINUTES",
        help="also save OUT/last (as --save-every) at the first step after this many minutes since the last save",
    )
    fit.add_argument(
        "--max-steps",
        type=positive_int,
        default=None,
        help="step budget: stop cleanly after this many optimiser steps; unlike --max-minutes the same command "
        "gives the same model on any machine ('cosine' then anneals over these steps); the run reports its minutes",
    )


def _add_run_directory_options(fit: argparse._ArgumentGroup) -> None:
    """Where a run starts from and writes to, and what happens to a run already there."""
    fit.add_argument(
        "--init-from",
        default=None,
        metavar="NAME|PATH",
        help="start from this model's weights (a shipped model's name, a run or a checkpoint directory) with a "
        "fresh optimiser (give --warmup-steps): its architecture, vocabulary and labels are used, the command's "
        "model options are not; the card of a model shipped from this run adds its training minutes",
    )
    fit.add_argument("--out", required=True, help="run directory (best/, last/, metrics.json, metrics.csv)")
    fit.add_argument(
        "--tensorboard", action="store_true", help="also log every epoch to TensorBoard, in OUT/tensorboard"
    )
    again = fit.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in OUT from OUT/last, with the settings and data it started with (every difference "
        "is named; --epochs, --patience, --max-minutes, --save-every, --device, --threads may change): from the "
        "end of the last epoch, or from the step where a checkpoint in the middle of one was saved",
    )
    again.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in OUT: what it wrote (listed in OUT/attnkit_run.json) is deleted once every "
        "check has passed, and put back if the new run fails before its first checkpoint; other files stay",
    )


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
        max_steps=getattr(args, "max_steps", None),
        save_every=getattr(args, "save_every", None),
        save_every_minutes=getattr(args, "save_every_minutes", None),
        tensorboard_dir=str(Path(args.out) / "tensorboard") if getattr(args, "tensorboard", False) else None,
        precision=getattr(args, "precision", "fp32"),
        **overrides,
    )


def say(*values: object) -> None:
    """``print`` on the main process only (one report under ``torchrun``)."""
    if is_main_process():
        print(*values)


def read_texts(args: argparse.Namespace, *, keep_blank: bool = False) -> list[str]:
    """The input texts: ``--text`` values, the ``--file``'s texts (:func:`read_file_texts`), or standard input's
    lines (ending at ``\\n`` only). Blank lines are dropped unless ``keep_blank`` (translate keeps them so its output
    lines up with its input)."""
    import sys

    from attnkit.data.reading import read_lines

    if getattr(args, "text", None):
        empty = [number for number, text in enumerate(args.text, start=1) if not text.strip()]
        if empty:
            raise ValueError(f"--text number {empty[0]} is empty: give a text to read")
        return list(args.text)
    if getattr(args, "file", None):
        lines = read_file_texts(args)
    elif sys.stdin is None or sys.stdin.isatty():
        raise ValueError("no text given: use --text, --file or standard input")
    else:
        lines = read_lines(sys.stdin)
    if not any(line.strip() for line in lines):
        raise ValueError("no text given: use --text, --file or standard input")
    return lines if keep_blank else [line for line in lines if line.strip()]


CHECKPOINT_HELP = "a run directory (meaning its best/), a checkpoint or a shipped model's name (attnkit models)"
FILE_HELP = (
    "the inputs: a CSV/TSV/JSONL/Parquet file gives its text column (a classifier's, as evaluate reads it; a "
    "seq2seq model's source column; --column to choose), any other file one text per line"
)


def add_file_column_option(parser: argparse.ArgumentParser) -> None:
    """``--column``: which column of a table ``--file`` holds the inputs (:func:`read_file_texts`)."""
    parser.add_argument(
        "--column",
        default=None,
        metavar="NAME",
        help="with a CSV/TSV/JSONL/Parquet --file: the column of the inputs (default: the checkpoint's text "
        "column; seq2seq: source)",
    )


def read_file_texts(args: argparse.Namespace) -> list[str]:
    """The texts of ``args.file``, read the same way by every command that runs a model on them: a table gives every
    row's input column (``--column``, else a classifier's text column, a seq2seq model's source column), any other
    file its lines, blank ones kept (:mod:`attnkit.data.input_files`)."""
    from attnkit.data.input_files import is_table, read_input_file

    if not is_table(args.file):
        return read_input_file(args.file, column="text")
    checkpoint = getattr(args, "checkpoint", None)
    if not checkpoint:  # no attnkit checkpoint (a Hugging Face classifier, --hf-model): a "text" column
        return read_input_file(args.file, column=getattr(args, "column", None) or "text")
    config = _checkpoint_config(checkpoint)
    pairs = "text_column" not in config  # a classifier names its text column; a seq2seq model (or export) reads pairs
    column = getattr(args, "column", None) or config.get("text_column") or "source"
    return read_input_file(args.file, column=column, pairs=pairs)


def _checkpoint_config(checkpoint: str | Sequence[str]) -> dict:
    """The ``config.json`` of ``checkpoint`` (the first of several; ``{}`` for an export directory, which has none)."""
    from attnkit.checkpointing import CONFIG_FILE, read_config
    from attnkit.tasks import task_for_checkpoint

    if isinstance(checkpoint, (list, tuple)):
        checkpoint = checkpoint[0]
    _, directory = task_for_checkpoint(checkpoint, exports=True)
    return read_config(directory) if (Path(directory) / CONFIG_FILE).is_file() else {}


def add_task_arguments(parser: argparse.ArgumentParser, tasks: Sequence, hook: str) -> None:
    """Mount every task's own options of a shared command (``hook``: ``"add_evaluate_arguments"``, ...), noting
    which task each belongs to, so that :func:`refuse_foreign_options` can refuse them for the others."""
    owners = {}
    for task in tasks:
        before = len(parser._actions)
        getattr(task, hook)(parser)
        for action in parser._actions[before:]:
            owners[action.dest] = (action.option_strings[0], action.default, task.name)
    parser.set_defaults(task_options=owners)


def refuse_foreign_options(args: argparse.Namespace, task) -> None:
    """Refuse an option another task brought to the command (``--index`` for a classifier), given for a checkpoint
    of ``task``."""
    for dest, (option, default, owner) in getattr(args, "task_options", {}).items():
        if owner != task.name and getattr(args, dest, default) != default:
            raise ValueError(f"{option}: an option of the {owner} task, not of {task.name} checkpoints")
