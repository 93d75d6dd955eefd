"""The start every ``attnkit train TASK`` hook shares (layer 5; no torch at import): the run plan checked, the
``--init-from`` checkpoint resolved, the task's config built once (from the checkpoint, or from the arguments by the
task's ``config_from_args``), the :class:`~attnkit.training.fit_config.FitConfig`, and whether ``--data`` is read as
a stream — all checked before anything is read or written.

    start = start_training(args, command="train classify", kind=KIND, inputs={...}, writes=(...),
                           config_from_args=config_from_args, config_from_init=ClassifierConfig.from_dict,
                           streams=streams)
    with start.plan.writing():
        ...  # train on start.config, start.fit_config
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.tasks.options import fit_config_from_args, is_main_process, non_negative_int

__all__ = [
    "STREAM_ABOVE_BYTES",
    "TrainingStart",
    "add_scan_option",
    "scan_bytes",
    "start_training",
    "stream_options",
    "streams_file",
]

STREAM_ABOVE_BYTES = 64 * 2**20  # --streaming auto streams training files larger than this


def add_scan_option(group: argparse._ArgumentGroup, learns: str) -> None:
    """``--scan-mb N``: how much of a streamed file the first pass reads for ``learns``."""
    group.add_argument(
        "--scan-mb",
        type=non_negative_int,
        default=64,
        metavar="N",
        help=f"a streamed file's first pass reads its first N MB for {learns} (default 64; 0: the whole file)",
    )


def scan_bytes(args: argparse.Namespace) -> int | None:
    """``--scan-mb`` in bytes; None for the whole file."""
    return args.scan_mb * 2**20 or None


def stream_options(args: argparse.Namespace) -> dict:
    """What every streamed training file is read with (``progress`` on rank 0 only)."""
    options = {"limit": args.limit, "skip_bad_rows": args.skip_bad_rows, "delimiter": args.delimiter}
    return {**options, "progress": not args.no_progress and is_main_process(), "sample_bytes": scan_bytes(args)}


@dataclass(frozen=True)
class TrainingStart:
    """What a train hook knows before it reads its data: the checked run ``plan`` (``plan.writing()`` guards every
    write), the ``--init-from`` checkpoint or None, the task's config (from that checkpoint when given), the loop's
    options and whether ``--data`` is trained on as a stream."""

    plan: Any
    init: Any
    config: Any
    fit_config: Any
    streamed: bool


def start_training(
    args: argparse.Namespace,
    *,
    command: str,
    kind: str,
    inputs: Mapping[str, tuple[str | None, Sequence[str]]],
    writes: Sequence[str],
    config_from_args: Callable[[argparse.Namespace], Any],
    config_from_init: Callable[[Any], Any],
    streams: Callable[[argparse.Namespace], bool] | None = None,
    fit_overrides: Mapping[str, Any] | None = None,
) -> TrainingStart:
    """Check and build everything ``args`` asks of one training run, in the order its errors are reported.
    ``inputs`` and ``writes`` are what :func:`~attnkit.tasks.run.plan.plan_run` checks; ``streams`` None: the task
    never streams; ``fit_overrides``: the task's own :class:`FitConfig` fields (``select_metric``, ...)."""
    from attnkit.tasks.run.plan import plan_run
    from attnkit.training.init_from import resolve_init_from

    plan = plan_run(args, command=command, inputs=inputs, writes=writes)
    init = resolve_init_from(args.init_from, kind)
    config = config_from_init(init) if init is not None else config_from_args(args)
    fit_config = fit_config_from_args(args, **(fit_overrides or {}))
    streamed = streams is not None and streams(args)
    return TrainingStart(plan, init, config, fit_config, streamed)


def streams_file(args: argparse.Namespace, builtins: Sequence[str]) -> bool:
    """Whether ``--data`` is read as a stream: a file, and ``--streaming always`` / ``--skip-bad-rows`` or (auto)
    larger than :data:`STREAM_ABOVE_BYTES`. ``builtins`` are the task's built-in data set names."""
    if args.data in builtins:
        if args.streaming == "always" or args.skip_bad_rows:
            raise ValueError(
                f"--streaming and --skip-bad-rows are for files; the built-in data set {args.data!r} is not"
            )
        return False
    if args.skip_bad_rows and args.streaming == "never":
        raise ValueError("--skip-bad-rows is for streamed files; drop --streaming never")
    if args.streaming == "always" or args.skip_bad_rows:
        return True
    path = Path(args.data)
    return args.streaming == "auto" and path.is_file() and path.stat().st_size > STREAM_ABOVE_BYTES
