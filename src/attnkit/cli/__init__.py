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
from collections.abc import Sequence

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


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (every subcommand)."""
    parser = argparse.ArgumentParser(
        prog="attnkit",
        description="Attention for sequence models: train, evaluate, predict and explain attention models.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    try:
        if hasattr(args, "seed"):  # commands that run a model: seed and threads first
            apply_runtime(args)
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print("attnkit: interrupted", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, RuntimeError) as err:  # DataError, CheckpointError are ValueErrors
        if getattr(args, "debug", False):
            raise
        print(f"attnkit: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
