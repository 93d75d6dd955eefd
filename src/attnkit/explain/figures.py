"""Saving every figure of a report as PNG and SVG files, for papers (``attnkit explain --save-figures DIR``).

The figure-drawing functions of :mod:`attnkit.explain.heatmaps` (and the section builders that call them) hand
each figure to the *active sink*, when there is one; nothing changes for code that draws figures without one.
A sink is opened with :func:`save_figures`, so task code that builds report sections needs no change:

    with save_figures("figures/"):
        write_report(...)          # every figure drawn inside is also kept as PNG and SVG

Files are named ``NN-figure.png`` / ``NN-figure.svg``: ``NN`` is the number of the report section that drew the
figure (01 for the first section on the page; every section builder counts, whether or not it draws), and
``figure`` says which picture it is (``alignment``, ``encoder-self-attention``, ``head-2``, ...). The files are
written when the ``with`` block ends without an error, each atomically; after an error nothing is written.
Figures are kept as they are drawn, so one drawn *before* the block is not saved: a block that ends with nothing
to write says so in a ``UserWarning`` (naming the figures drawn outside any block since the last one).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attnkit.explain._files import write_atomic

__all__ = ["FigureSink", "add_figure", "add_image", "begin_section", "check_directory", "save_figures"]

SAVED_DPI = 200
"""Pixels per inch of the saved PNGs (the page's inline images use 100)."""

_SINK: contextvars.ContextVar[FigureSink | None] = contextvars.ContextVar("attnkit_figure_sink", default=None)
_UNSAVED: list[str] = []  # names of figures drawn with no block open, since the last block ended


@dataclass
class FigureSink:
    """The figures kept so far: ``files`` maps a file name (``01-alignment.png``) to its bytes, in drawing order."""

    directory: Path
    dpi: int = SAVED_DPI
    section: int = 0
    files: dict[str, bytes] = field(default_factory=dict)

    def stem(self, name: str) -> str:
        """A new file stem ``NN-name`` for this section (``-2``, ``-3``... when the name repeats)."""
        base = f"{self.section:02d}-{_slug(name)}"
        stem, count = base, 1
        while f"{stem}.png" in self.files:
            count += 1
            stem = f"{base}-{count}"
        return stem

    def write(self) -> list[Path]:
        """Write every kept file into ``directory`` (created when missing). Returns the paths, in order."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            return [write_atomic(self.directory / name, data) for name, data in self.files.items()]
        except OSError as error:
            raise ValueError(f"save figures: cannot write into {self.directory}: {error.strerror or error}") from None


def check_directory(directory: str | os.PathLike[str]) -> Path:
    """Check that ``directory`` is, or can become, a writable folder to write figures in; return it as a ``Path``."""
    path = Path(directory).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"save figures: {path} is an existing file; give a folder (it is created when missing)")
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"save figures: {ancestor} is a file, so the folder {path} cannot be created")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"save figures: {ancestor} is not writable")
    return path


@contextlib.contextmanager
def save_figures(directory: str | os.PathLike[str], *, dpi: int = SAVED_DPI) -> Iterator[FigureSink]:
    """Keep every figure drawn inside the block, and write them as PNG + SVG into ``directory`` at its end.

    ``directory`` is checked first (:func:`check_directory`); nothing is written when the block raises.
    """
    sink = FigureSink(check_directory(directory), dpi=dpi)
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)
    unsaved, _UNSAVED[:] = list(_UNSAVED), []
    if not sink.files:
        before = (
            f"; {len(unsaved)} figure(s) drawn before it ({', '.join(unsaved[:4])}{', ...' if len(unsaved) > 4 else ''})"
            " were not saved: draw them inside the block"
            if unsaved
            else ""
        )
        warnings.warn(
            f"save_figures({str(sink.directory)!r}): no figure was drawn inside the block{before}", stacklevel=3
        )
    sink.write()


def active() -> bool:
    """Whether a :func:`save_figures` block is open (so that optional paper figures are worth drawing)."""
    return _SINK.get() is not None


def begin_section() -> None:
    """Called by each section builder: figures drawn next belong to the next section number."""
    sink = _SINK.get()
    if sink is not None:
        sink.section += 1


def add_figure(name: str, figure) -> None:
    """Keep a matplotlib ``Figure`` as ``NN-name.png`` (at the sink's dpi) and ``NN-name.svg``; no-op without a sink."""
    sink = _SINK.get()
    if sink is None:
        _UNSAVED.append(name)
        del _UNSAVED[:-100]  # a bounded record
        return
    from attnkit.explain.fonts import drawing_fonts

    stem = sink.stem(name)
    for extension, options in (("png", {"dpi": sink.dpi}), ("svg", {"metadata": {"Date": None}})):
        buffer = io.BytesIO()
        with drawing_fonts():
            figure.savefig(buffer, format=extension, **options)
        sink.files[f"{stem}.{extension}"] = buffer.getvalue()


def add_image(name: str, rgb: np.ndarray) -> None:
    """Keep an ``[Hi, Wi, 3]`` image in [0, 1] as ``NN-name.png`` (pixel for pixel) and ``NN-name.svg``."""
    sink = _SINK.get()
    if sink is None:
        _UNSAVED.append(name)
        del _UNSAVED[:-100]
        return
    from matplotlib.image import imsave

    stem = sink.stem(name)
    for extension, options in (("png", {}), ("svg", {"metadata": {"Date": None}})):
        buffer = io.BytesIO()
        imsave(buffer, rgb, format=extension, **options)
        sink.files[f"{stem}.{extension}"] = buffer.getvalue()


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return slug[:48].rstrip("-") or "figure"
