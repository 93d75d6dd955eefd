"""Two rules every reader of labelled text applies to a row's fields (layer 5; no torch): what a label is, and how
much of a text is kept.

Labels. A label is text. In CSV and TSV files it is the field as written (surrounding spaces removed). In JSONL a
label may also be a JSON number that is a whole number, which stands for its decimal text: ``1``, ``1.0`` and
``"1"`` are one label, ``"1"``. Anything else — a fraction (``1.5``), ``true``/``false``, ``null``, a list or an
object — is refused (the reader names ``file:line``), since no text would say what it means.

Texts. A classifier reads at most a few thousand tokens of a document, so a reader cuts a longer text to
``max_chars`` characters at once (:func:`capped_text`): one 50 MB field otherwise fills gigabytes of memory in the
tokeniser for words the model never reads.
"""

from __future__ import annotations

import json
import math

__all__ = ["LABEL_RULE", "capped_text", "label_text"]

LABEL_RULE = (
    'a label is text; in JSONL a whole number is the text of its digits (1, 1.0 and "1" are one label) and '
    "anything else that is not a string (1.5, true, null, lists, objects) is refused"
)


def label_text(value: object) -> str:
    """The label a JSON (or CSV/TSV) field holds, by the rule of the module docstring; ValueError with the reason
    (for the caller to prefix with ``file:line``) for a value the rule does not cover."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        shown = json.dumps(value)[:40]
        raise ValueError(f"must be text or a whole number, found {shown}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return str(int(value))
        raise ValueError(f"must be text or a whole number, found the number {value!r} (write it as a string)")
    raise ValueError(f"must be text or a whole number, found {type(value).__name__}")


def capped_text(text: str, max_chars: int | None) -> str:
    """``text`` cut to its first ``max_chars`` characters (None: kept whole)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return text[:max_chars]
