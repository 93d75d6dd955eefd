"""Reading user text: UTF-8 with ``file:line`` errors, lines split on ``"\\n"`` only, JSON lines (layer 5).

Every user file attnkit reads goes through these functions, and every problem they find is one
:class:`DataError` (a ``ValueError``) whose one-line message starts with the file's name, and its line where
one applies.

A line ends at ``"\\n"`` and nowhere else (a ``"\\r"`` just before it is dropped, for CRLF files).
``str.splitlines()`` is not used: it also breaks at U+2028, U+2029, NEL (U+0085), form feed, vertical tab and
U+001C-U+001E, characters that are legal inside a JSON string and inside a line of text, so a valid JSONL file
would be refused and a file of N texts could give more than N outputs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO

__all__ = [
    "DataError",
    "decode_utf8",
    "open_binary",
    "parse_json_line",
    "read_lines",
    "read_utf8",
    "shown_json",
    "split_lines",
    "unicode_problem",
]

_BOM = b"\xef\xbb\xbf"
_SURROGATE = re.compile("[\ud800-\udfff]")


class DataError(ValueError):
    """Bad input data. The message is one line, starting with ``file:line`` where a line applies."""


def read_utf8(path: str | Path) -> str:
    """The file's text (UTF-8, BOM allowed); DataError ``file: ...`` as :func:`open_binary` says, ``file:line: ...``
    for bytes that are not UTF-8."""
    path = Path(path)
    with open_binary(path) as handle:
        return decode_utf8(handle.read(), str(path))


def decode_utf8(raw: bytes, name: str) -> str:
    """``raw`` decoded as UTF-8 (a leading BOM dropped); DataError ``name:line: byte 0x.. at column C is not valid
    UTF-8; ...`` (line and byte column 1-based, in the file as saved)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        start = error.start + (len(_BOM) if raw.startswith(_BOM) else 0)
        line = raw.count(b"\n", 0, start) + 1
        raise not_utf8(name, line, raw[start], start - raw.rfind(b"\n", 0, start)) from None


def not_utf8(name: str, line: int, byte: int, column: int) -> DataError:
    """The error for a byte that is not UTF-8 at ``name:line``, byte ``column`` (1-based)."""
    return DataError(f"{name}:{line}: byte 0x{byte:02x} at column {column} is not valid UTF-8; save the file as UTF-8")


def split_lines(text: str) -> list[str]:
    """``text`` cut at each ``"\\n"`` (and nowhere else), one ``"\\r"`` before it dropped.

    A final ``"\\n"`` ends the last line and does not start an empty one: ``"a\\nb\\n"`` and ``"a\\r\\nb"`` both
    give ``["a", "b"]``; ``""`` gives ``[]``. Line ``i`` of the result is physical line ``i + 1`` of the file.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(source: str | Path | IO) -> list[str]:
    """The lines of a file, or of an open stream such as ``sys.stdin``, split by :func:`split_lines`.

    Blank lines are kept, so the result lines up with the input. A stream is read through its binary buffer when
    it has one (``sys.stdin.buffer``), so bytes that are not UTF-8 are reported with their line whatever the
    locale. Errors are :func:`read_utf8`'s, a stream named by its ``name`` (``<stdin>``).
    """
    if isinstance(source, (str, Path)):
        return split_lines(read_utf8(source))
    name = str(getattr(source, "name", "<stream>"))
    stream = getattr(source, "buffer", source)
    try:
        content = stream.read()
    except OSError as error:
        raise DataError(f"{name}: cannot read ({error.strerror or error})") from None
    if isinstance(content, bytes):
        content = decode_utf8(content, name)
    return split_lines(content)


def parse_json_line(content: str) -> object:
    """The JSON value on one line; ValueError with a short reason (``invalid JSON (Expecting value at column 9)``)
    for the caller to prefix with ``file:line``, also for nesting too deep and integers too long to convert."""
    try:
        return json.loads(content)
    except json.JSONDecodeError as error:
        message = error.msg  # "Unterminated string starting at", "Invalid control character at", "Extra data"
        joiner = " column " if message.endswith(" at") else " at column "
        raise ValueError(f"invalid JSON ({message}{joiner}{error.colno})") from None
    except RecursionError:
        raise ValueError("invalid JSON (nested too deeply to read)") from None
    except ValueError as error:  # "Exceeds the limit (4300 digits) for integer string conversion: ..."
        raise ValueError(f"invalid JSON ({str(error).split(':')[0]})") from None


def shown_json(value: object, limit: int = 60) -> str:
    """``value`` as JSON on one line for a message, cut to about ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def unicode_problem(text: str) -> str | None:
    """Why ``text`` is not Unicode text (a lone surrogate, as a JSON ``"\\ud800"`` escape gives), or ``None``."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"holds a lone surrogate \\u{ord(found.group()):04x} at character {found.start() + 1}, which is not text"


def open_binary(path: Path):
    """``path`` opened for binary reading; DataError ``file: ...`` when it is missing, a directory, unreadable or
    not a valid path."""
    try:
        if path.is_dir():
            raise IsADirectoryError
        return path.open("rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a file") from None
    except PermissionError:
        raise DataError(f"{path}: permission denied, cannot read the file") from None
    except OSError as error:
        raise DataError(f"{path}: cannot read ({error.strerror or error})") from None
    except ValueError as error:  # e.g. "embedded null byte" in the path
        raise DataError(f"{path!r}: not a usable file name ({error})") from None
