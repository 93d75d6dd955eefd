"""Fonts for saved figures (layer 5): a fallback list so that Chinese, Japanese, Korean and symbols are drawn, and
one warning, not one per character, for the glyphs no installed font has.

matplotlib (3.6+) falls back along ``font.family`` character by character. The list is DejaVu Sans (matplotlib's
own, for Latin, Greek, Cyrillic) followed by the installed ones of :data:`FALLBACK` — Debian's ``fonts-noto-cjk``
gives the Noto Sans CJK faces (``scripts/install-extras.sh`` installs it). Colour-bitmap emoji fonts (Noto Color
Emoji) cannot be drawn by matplotlib's FreeType renderer, so an emoji shows as a box unless a monochrome emoji font
(Noto Emoji, Symbola) is installed; the HTML report itself shows it with the browser's fonts either way.
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = ["FALLBACK", "drawing_fonts", "font_families", "with_fallback_fonts"]

FALLBACK = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Noto Sans Symbols 2",
    "Noto Emoji",
    "Symbola",
)
T = TypeVar("T")
_FILES = re.compile(r"^(NotoSansCJK-Regular|NotoSansSymbols2-Regular|NotoEmoji-Regular|Symbola)\.")
_GLYPH = re.compile(r"Glyph (\d+) .*missing from")


@functools.cache
def font_families() -> tuple[str, ...]:
    """``("DejaVu Sans", ...)``: matplotlib's default face, then every installed family of :data:`FALLBACK`."""
    from matplotlib import font_manager

    installed = {entry.name for entry in font_manager.fontManager.ttflist}
    if not set(FALLBACK) <= installed:  # matplotlib's font cache may predate the fonts: add their files
        for path in font_manager.findSystemFonts():
            if _FILES.search(path.rsplit("/", 1)[-1]):
                with contextlib.suppress(OSError, RuntimeError, ValueError):
                    font_manager.fontManager.addfont(path)
        installed = {entry.name for entry in font_manager.fontManager.ttflist}
    return ("DejaVu Sans", *(family for family in FALLBACK if family in installed))


@contextlib.contextmanager
def drawing_fonts() -> Iterator[None]:
    """Create and draw figures inside this block: text uses :func:`font_families`, and the "Glyph N missing from
    font(s)" warnings matplotlib gives once per character become one ``UserWarning`` naming the characters."""
    import matplotlib

    with matplotlib.rc_context({"font.family": list(font_families())}), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
    missing: list[str] = []
    for warning in seen:
        found = _GLYPH.search(str(warning.message))
        if found is None:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        elif chr(int(found.group(1))) not in missing:
            missing.append(chr(int(found.group(1))))
    if missing:
        shown = " ".join(missing[:12]) + (" ..." if len(missing) > 12 else "")
        warnings.warn(
            f"{len(missing)} character(s) have no glyph in the installed fonts and are drawn as boxes in the saved "
            f"figures: {shown} (install Noto fonts: scripts/install-extras.sh; the HTML report shows them)",
            stacklevel=3,
        )


def with_fallback_fonts(build: Callable[..., T]) -> Callable[..., T]:
    """Decorate a figure-building function to run inside :func:`drawing_fonts` (the text it makes keeps the
    fallback families when the figure is saved later)."""

    @functools.wraps(build)
    def building(*args, **kwargs) -> T:
        with drawing_fonts():
            return build(*args, **kwargs)

    return building
