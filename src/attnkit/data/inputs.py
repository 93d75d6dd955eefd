"""What a Python caller hands ``predict`` / ``translate``: one text or a sequence of texts, checked once (layer 5).

The command line refuses an empty ``--text`` (``--text number N is empty``); the Python API refuses an empty text
the same way, and reads a ``str`` as **one** input (as Hugging Face pipelines do), never as its characters.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["as_texts"]


def as_texts(texts: str | Iterable[str], *, what: str = "text") -> list[str]:
    """``texts`` as a list of non-empty strings: a ``str`` is one text, any other iterable its items.

    Raises:
        TypeError: ``texts`` is neither a ``str`` nor an iterable (say, ``None``), or an item is not a ``str``
            (naming its index and type).
        ValueError: an item that is empty or only whitespace (naming its index), or no texts at all.
    """
    if isinstance(texts, str):
        texts = [texts]
    elif isinstance(texts, bytes) or not isinstance(texts, Iterable):
        raise TypeError(f"{what}s must be a str or a sequence of str, got {type(texts).__name__}")
    items = list(texts)
    if not items:
        raise ValueError(f"no {what} given: pass a str or a non-empty sequence of str")
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{what} at index {index} is {type(item).__name__}, not str")
        if not item.strip():
            raise ValueError(f"{what} at index {index} is empty: give a text to read")
    return items
