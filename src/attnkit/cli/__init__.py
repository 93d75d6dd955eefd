"""The ``attnkit`` command (layer 6): it parses the arguments and dispatches. ``train``, ``evaluate``, ``predict``
and ``explain`` find the task in :mod:`attnkit.tasks` (by name, or by the checkpoint's kind) and call its hooks;
heavy imports happen inside handlers, so ``attnkit --help`` stays fast.

    attnkit train classify --data fine-foods --model han --out runs/ff
    attnkit evaluate --checkpoint runs/ff/best --data fine-foods
    attnkit predict --checkpoint runs/ff/best --text "Great coffee, will buy again."
    attnkit demo
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn

from attnkit.cli import commands
from attnkit.tasks.options import apply_runtime

EPILOG = """examples:
  attnkit demo                                           train HAN on fine-food reviews and explain it
  attnkit train classify --data 20ng --model pooled --out runs/20ng
  attnkit train classify --data reviews.csv --test test.csv --text-column review --label-column stars
  attnkit evaluate --checkpoint runs/20ng/best --data 20ng
  attnkit predict --checkpoint runs/20ng/best --text "the shuttle launch was delayed"
  echo "some text" | attnkit predict --checkpoint runs/20ng/best
"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, reporting a usage error as one ``attnkit: error:`` line (exit 2) that names the command
    whose ``--help`` explains it, and printing descriptions and examples as written; sub-command parsers are of the
    same class."""

    def __init__(self, *args, formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"attnkit: error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (every subcommand)."""
    parser = ArgumentParser(
        prog="attnkit",
        description="Attention for sequence models: train, evaluate, predict and explain attention models.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    commands.register_all(sub)
    return parser


def _version() -> str:
    from attnkit import __version__

    return f"attnkit {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``attnkit`` console script. Returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.formatwarning = _warning_line
    try:
        if hasattr(args, "seed"):  # commands that run a model: seed and threads first
            apply_runtime(args)
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("attnkit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`attnkit predict ... | head -n 1`): stop quietly
        _silence_stdout()
        return 141  # as a shell reports a process ended by SIGPIPE
    except (ValueError, OSError, RuntimeError) as err:  # DataError, CheckpointError are ValueErrors
        if getattr(args, "debug", False):
            raise
        print(f"attnkit: error: {_one_line(err)}", file=sys.stderr)
        return 2


def _warning_line(message: Warning | str, category: type[Warning], *_: object, **__: object) -> str:
    """A warning as the command shows it: one ``attnkit: warning:`` line (not Python's file:line and source)."""
    return f"attnkit: warning: {' '.join(str(message).split())}\n"


def _one_line(error: BaseException) -> str:
    """An error as one line: an OS error as ``path: reason`` (``PermissionError`` -> "runs/x: Permission denied")."""
    if isinstance(error, OSError) and error.strerror:
        paths = [str(path) for path in (error.filename, error.filename2) if path is not None]
        return ": ".join([*paths[:1], error.strerror]) if paths else error.strerror
    return " ".join(str(error).split("\n")) or type(error).__name__


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not raise a second BrokenPipeError."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
