"""Reading user text: lines end at "\\n" only, UTF-8 errors name file:line, streams read like files, JSON reasons."""

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnkit.data.reading import DataError, parse_json_line, read_lines, split_lines, unicode_problem

BREAKERS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"  # str.splitlines() breaks at each of these


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", []),
        ("\n", [""]),
        ("a", ["a"]),
        ("a\nb\n", ["a", "b"]),
        ("a\r\nb", ["a", "b"]),
        ("a\n\nb\n\n", ["a", "", "b", ""]),
        ("a\rb\n", ["a\rb"]),  # a lone carriage return is not a line end
        ("a\r\r\n", ["a\r"]),  # one "\r" before "\n" goes
        (f"x{BREAKERS}y\nz", [f"x{BREAKERS}y", "z"]),
    ],
)
def test_split_lines(text, lines):
    assert split_lines(text) == lines


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]))))
def test_split_lines_inverts_writing_one_line_each(lines):
    lines = [line.rstrip("\r") for line in lines]
    assert split_lines("".join(line + "\n" for line in lines)) == lines
    assert split_lines("".join(line + "\r\n" for line in lines)) == lines


def test_read_lines_from_a_file_keeps_blank_lines_and_unicode_separators(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("\ufeffone\u2028still one\r\n\r\ntwo\x85too\nthree".encode())
    assert read_lines(path) == ["one\u2028still one", "", "two\x85too", "three"]
    assert read_lines(str(path)) == read_lines(path)


def test_read_lines_from_a_text_stream_reads_its_bytes(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("a\u2028b\nc\n".encode())
    with open(path, encoding="latin-1") as handle:  # the wrapper's encoding does not matter: bytes are read
        assert read_lines(handle) == ["a\u2028b", "c"]
    assert read_lines(io.StringIO("x\x0cy\nz")) == ["x\x0cy", "z"]
    assert read_lines(io.BytesIO("é\r\n".encode())) == ["é"]


def test_read_lines_reports_invalid_utf8_with_file_and_line(tmp_path):
    path = tmp_path / "reviews.txt"
    path.write_bytes(b"fine\nalso fine\ncaf\xe9\n")
    with pytest.raises(DataError, match=r"^.*reviews\.txt:3: byte 0xe9 at column 4 is not valid UTF-8"):
        read_lines(path)
    with open(path) as handle, pytest.raises(DataError, match=r"reviews\.txt:3: byte 0xe9 at column 4"):
        read_lines(handle)
    raw = io.BytesIO(b"ok\n\xffbad\n")
    raw.name = "<stdin>"
    stdin = io.TextIOWrapper(raw)  # as sys.stdin: a text wrapper over a named binary buffer
    with pytest.raises(DataError, match=r"^<stdin>:2: byte 0xff at column 1 is not valid UTF-8"):
        read_lines(stdin)


def test_read_lines_file_errors(tmp_path):
    with pytest.raises(DataError, match=r"missing\.txt: no such file"):
        read_lines(tmp_path / "missing.txt")
    with pytest.raises(DataError, match=r"is a directory, expected a file"):
        read_lines(tmp_path)


def test_read_lines_stream_that_cannot_be_read(tmp_path):
    class Broken:
        name = "<stdin>"

        def read(self):
            raise IsADirectoryError(21, "Is a directory")

    with pytest.raises(DataError, match=r"^<stdin>: cannot read \(Is a directory\)$"):
        read_lines(Broken())


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"a": "x', "invalid JSON (Unterminated string starting at column 7)"),
        ('{"a": "\x01"}', "invalid JSON (Invalid control character at column 8)"),
        ('{"a": 1} 2', "invalid JSON (Extra data at column 10)"),
        ("", "invalid JSON (Expecting value at column 1)"),
        ("[" * 50_000, "invalid JSON (nested too deeply to read)"),
    ],
)
def test_parse_json_line_reasons(line, reason):
    with pytest.raises(ValueError) as caught:
        parse_json_line(line)
    assert str(caught.value) == reason


def test_parse_json_line_keeps_unicode_separators():
    assert parse_json_line('{"t": "a\u2028b\x85c"}') == {"t": "a\u2028b\x85c"}


def test_unicode_problem():
    assert unicode_problem("fine \u2028 text 🙂") is None
    assert unicode_problem("ab\udc80") == "holds a lone surrogate \\udc80 at character 3, which is not text"
