"""The pair-file options of ``attnkit train seq2seq``: the two columns and ``--delimiter`` (layer 5; no torch)."""

from __future__ import annotations

import argparse

from attnkit.tasks.options import DELIMITER_HELP, delimiter_option

__all__ = ["add_pair_file_arguments"]


def add_pair_file_arguments(group: argparse._ArgumentGroup) -> None:
    """``--source-column``, ``--target-column`` and ``--delimiter`` (``evaluate`` has its own columns and shares
    ``--delimiter`` with classifiers)."""
    group.add_argument("--source-column", default="source", help="column/key of the source (default: source)")
    group.add_argument("--target-column", default="target", help="column/key of the target (default: target)")
    group.add_argument("--delimiter", type=delimiter_option, default=None, help=DELIMITER_HELP)
