"""What a Python caller hands ``predict`` / ``translate`` / ``evaluate``: one text or a sequence of texts (and, to
evaluate, one target or label per text), checked once (layer 5).

The command line refuses an empty ``--text`` (``--text number N is empty``); the Python API refuses an empty text
the same way, and reads a ``str`` as **one** input (as Hugging Face pipelines do), never as its characters. An
empty batch is not an error: ``predict([])`` and ``translate([])`` return ``[]`` (``None``, or an item that is not
a ``str``, is one: ``TypeError``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["as_pairs", "as_texts"]


def as_texts(texts: str | Iterable[str], *, what: str = "text") -> list[str]:
    """``texts`` as a list of non-empty strings: a ``str`` is one text, any other iterable its items (none: ``[]``).

    Raises:
        TypeError: ``texts`` is neither a ``str`` nor an iterable (say, ``None``), or an item is not a ``str``.
        ValueError: an item that is empty or only whitespace (naming its index).
    """
    if isinstance(texts, str):
        texts = [texts]
    elif isinstance(texts, bytes) or not isinstance(texts, Iterable):
        raise TypeError(f"{what}s must be a str or a sequence of str, got {type(texts).__name__}")
    items = list(texts)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{what} at index {index} is {type(item).__name__}, not str")
        if not item.strip():
            raise ValueError(f"{what} at index {index} is empty: give a text to read")
    return items


def as_pairs(
    sources: str | Iterable[str], targets: str | Iterable[str | Iterable[str]]
) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """``evaluate(sources, targets)``'s arguments — the shape of ``Classifier.evaluate(texts, labels)`` — as
    ``(pairs, references)``: ``sources`` as :func:`as_texts` reads them, ``targets`` one per source, each a ``str``
    or a non-empty sequence of acceptable ``str`` (the first is the pair's target, the teacher-forced loss's).
    TypeError / ValueError as :func:`as_texts`, and ValueError when the two lengths differ or there are no sources.
    """
    texts = as_texts(sources, what="source")
    targets = [targets] if isinstance(targets, str) else targets
    if isinstance(targets, bytes) or not isinstance(targets, Iterable):
        raise TypeError(f"targets must be a str or a sequence (one per source), got {type(targets).__name__}")
    targets = list(targets)
    if len(targets) != len(texts):
        raise ValueError(f"sources has {len(texts)} items but targets has {len(targets)}")
    if not texts:
        raise ValueError("nothing to evaluate: no sources")
    references = [
        as_texts(target, what=f"target {index}: reference") if not isinstance(target, str) else [target]
        for index, target in enumerate(targets)
    ]
    for index, acceptable in enumerate(references):
        if not acceptable:
            raise ValueError(f"target at index {index} lists no acceptable target")
        if not acceptable[0].strip():
            raise ValueError(f"target at index {index} is empty")
    return [(text, acceptable[0]) for text, acceptable in zip(texts, references, strict=True)], references
