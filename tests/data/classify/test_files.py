"""User files: CSV/TSV/JSONL round trips, and every kind of bad input reported as one DataError at file:line."""

import csv
import json
import re

import pytest

from attnkit.data.classify.files import DataError, detect_format, load_files, read_rows

ROWS = [
    ('A fine, "quoted" text.\nIt spans two lines.', "pos"),
    ("Plain text with a\ttab? No: only in JSONL.", "neg"),
    ("Ünïcödé — and émojis 🙂", "pos"),
    ("42", "neutral"),
]


def write_table(path, rows, *, delimiter=",", header=("text", "label")):
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def write_tsv(path, rows, *, header=("text", "label")):
    """TSV as attnkit reads it: verbatim, one row per line, no quoting."""
    path.write_text("".join("\t".join(row) + "\n" for row in [header, *rows]), encoding="utf-8")
    return path


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps({"text": t, "label": y, "id": i}) + "\n" for i, (t, y) in enumerate(rows)))
    return path


def expect_error(path, line, message, call):
    """``call()`` raises DataError whose message starts with ``path:line: `` and contains ``message``."""
    with pytest.raises(DataError) as caught:
        call()
    text = str(caught.value)
    assert text.startswith(f"{path}:{line}: "), text
    assert re.search(message, text), text
    assert "\n" not in text
    return text


# --- good files ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_round_trip(tmp_path, suffix):
    # a TSV field holds neither a tab nor a newline; its quotes are text
    rows = [(re.sub(r"[\t\n]", " ", t), y) for t, y in ROWS] if suffix == ".tsv" else ROWS
    train = tmp_path / f"train{suffix}"
    test = tmp_path / f"test{suffix}"
    if suffix == ".jsonl":
        write_jsonl(train, rows), write_jsonl(test, rows[:2])
    elif suffix == ".tsv":
        write_tsv(train, rows), write_tsv(test, rows[:2])
    else:
        write_table(train, rows), write_table(test, rows[:2])

    data = load_files(train, test)
    assert data.train_texts == [t for t, _ in rows]
    assert data.label_names == ["neg", "neutral", "pos"]
    assert [data.label_names[i] for i in data.train_labels] == [y for _, y in rows]
    assert data.test_texts == [t for t, _ in rows[:2]] and data.test_labels == [2, 0]
    assert data.punctuated and data.name == "train"


def test_line_numbers_follow_multiline_fields_blank_lines_and_a_bom(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes('\ufefftext,label\n"one\ntwo\nthree",a\n\n"four",b\r\nfive,a\n'.encode())
    rows = read_rows(path)
    assert rows.texts == ["one\ntwo\nthree", "four", "five"]
    assert rows.labels == ["a", "b", "a"]
    assert rows.lines == [2, 6, 7]


def test_texts_only_for_prediction_and_custom_columns(tmp_path):
    path = write_table(tmp_path / "in.csv", [("hello", "x")], header=("review", "score"))
    rows = read_rows(path, text_column="review", label_column=None)
    assert rows.texts == ["hello"] and rows.labels is None
    data = load_files(path, text_column="review", label_column="score", min_labels=1)  # a file to evaluate on
    assert data.label_names == ["x"] and data.test_texts == [] and data.test_labels == []


def test_json_labels_compare_as_strings(tmp_path):
    train = tmp_path / "train.jsonl"
    train.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": "2"}\n')
    test = tmp_path / "test.jsonl"
    test.write_text('{"text": "c", "label": "1"}\n')
    data = load_files(train, test)
    assert data.label_names == ["1", "2"] and data.test_labels == [0]


# --- bad input: each names file:line ------------------------------------------------------------------------


def test_missing_column_in_header(tmp_path):
    path = write_table(tmp_path / "train.csv", [("t", "y")], header=("body", "label"))
    text = expect_error(path, 1, r"no column 'text' in the header \(columns: body, label\)", lambda: read_rows(path))
    assert "body" in text


def test_missing_key_in_jsonl(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n\n{"txt": "b", "label": "y"}\n')
    expect_error(path, 3, r"no 'text' field \(fields: txt, label\)", lambda: read_rows(path))


@pytest.mark.parametrize("empty", ["", "   ", "\n"])
def test_empty_text(tmp_path, empty):
    path = write_table(tmp_path / "train.csv", [("multi\nline", "a"), (empty, "b")])
    expect_error(path, 4, r"empty text in column 'text'", lambda: read_rows(path))


def test_empty_label(tmp_path):
    path = write_tsv(tmp_path / "train.tsv", [("ok", "a"), ("ok", "a"), ("fine", " ")])
    expect_error(path, 4, r"empty label in column 'label'", lambda: read_rows(path))


def test_null_text_in_jsonl(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": null, "label": "x"}\n')
    expect_error(path, 1, r"text in 'text' must be a string, found null", lambda: read_rows(path))


def test_undecodable_bytes(tmp_path):
    path = tmp_path / "train.csv"
    path.write_bytes(b"text,label\ngood,a\nalso good,b\ncaf\xe9 au lait,a\n")
    expect_error(path, 4, r"byte 0xe9 at column 4 is not valid UTF-8", lambda: read_rows(path))


def test_undecodable_bytes_after_a_bom(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "a", "label": "x"}\n{"text": "\xff", "label": "x"}\n')
    expect_error(path, 2, r"byte 0xff at column 11", lambda: read_rows(path))


def test_label_seen_only_in_test(tmp_path):
    train = write_table(tmp_path / "train.csv", [("a", "pos"), ("b", "neg")])
    test = write_table(tmp_path / "test.csv", [("c", "pos"), ("d", "neutral"), ("e", "pos")])
    expect_error(
        test,
        3,
        rf"label 'neutral' does not occur in the training file {re.escape(str(train))} .*'neg', 'pos'",
        lambda: load_files(train, test),
    )


def test_wrong_number_of_fields(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text("text,label\na,x\nb,y,extra\n")
    expect_error(path, 3, r"expected 2 fields as in the header, found 3", lambda: read_rows(path))


def test_invalid_json(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n{"text": "b", "label": }\n')
    expect_error(path, 2, r"invalid JSON", lambda: read_rows(path))


def test_json_line_that_is_not_an_object(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('["a", "x"]\n')
    expect_error(path, 1, r"expected a JSON object, found list", lambda: read_rows(path))


def test_duplicate_column(tmp_path):
    path = write_table(tmp_path / "train.csv", [("a", "b", "x")], header=("text", "text", "label"))
    expect_error(path, 1, r"column 'text' appears 2 times", lambda: read_rows(path))


def test_empty_and_header_only_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    expect_error(empty, 1, r"the file is empty", lambda: read_rows(empty))
    header_only = tmp_path / "header.csv"
    header_only.write_text("text,label\n")
    expect_error(header_only, 1, r"no data rows", lambda: read_rows(header_only))


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(DataError, match=r"nope\.csv: no such file"):
        read_rows(tmp_path / "nope.csv")
    with pytest.raises(DataError, match=r"cannot tell the file type from suffix '\.xlsx'"):
        detect_format(tmp_path / "data.xlsx")
    assert detect_format("a.TSV") == "tsv" and detect_format("b.ndjson") == "jsonl"


def test_nothing_is_written_on_error(tmp_path):
    train = write_table(tmp_path / "train.csv", [("a", "pos"), ("c", "neg")])
    test = write_table(tmp_path / "test.csv", [("b", "other")])
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(DataError):
        load_files(train, test)
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before


# --- lines end at "\n" only (issue 17) ----------------------------------------------------------------------

# characters str.splitlines() breaks at, all legal inside a JSON string and a line of text
LINE_BREAKERS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])  # the others are escaped in JSON strings
def test_jsonl_strings_may_hold_unicode_line_separators(tmp_path, char):
    path = tmp_path / "train.jsonl"
    texts = [f"first{char}half", "plain", f"{char}edge{char}"]
    lines = [json.dumps({"text": t, "label": y}, ensure_ascii=False) for t, y in zip(texts, "aba", strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = read_rows(path)
    assert rows.texts == texts and rows.labels == ["a", "b", "a"] and rows.lines == [1, 2, 3]


@pytest.mark.parametrize("suffix", [".tsv", ".csv"])
def test_table_texts_may_hold_unicode_line_separators(tmp_path, suffix):
    texts = [f"a{char}b" for char in LINE_BREAKERS if char not in "\x0b\x0c\x1c\x1d\x1e" or suffix == ".tsv"]
    rows = [(t, "x" if i % 2 else "y") for i, t in enumerate(texts)]
    path = write_tsv(tmp_path / f"t{suffix}", rows) if suffix == ".tsv" else write_table(tmp_path / f"t{suffix}", rows)
    assert read_rows(path).texts == texts


def test_crlf_tsv_keeps_no_carriage_return(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"label\ttext\r\npos\tgood\r\nneg\tbad\r\n")
    rows = read_rows(path)
    assert rows.texts == ["good", "bad"] and rows.labels == ["pos", "neg"] and rows.lines == [2, 3]


def test_invalid_json_message_names_the_column_once(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n{"text": "a", "label": "y}\n')
    text = expect_error(path, 2, r"invalid JSON \(Unterminated string starting at column 24\)", lambda: read_rows(path))
    assert "at at" not in text


# --- TSV is read verbatim (issue 17) ------------------------------------------------------------------------


def test_tsv_with_an_unclosed_quote_keeps_every_row(tmp_path):
    rows = [(f"text number {i}", "pos" if i % 2 else "neg") for i in range(80)]
    rows[10] = ('"Unclosed quote at the start', "pos")
    rows[20] = ('He said "hi" and "left', "neg")
    path = write_tsv(tmp_path / "train.tsv", rows)
    data = load_files(path)
    assert len(data.train_texts) == 80
    assert data.train_texts[10] == '"Unclosed quote at the start' and data.train_texts[11] == "text number 11"
    assert data.train_texts[20] == 'He said "hi" and "left'
    assert [data.label_names[y] for y in data.train_labels] == [y for _, y in rows]


def test_tsv_keeps_quotes_as_text(tmp_path):
    path = write_tsv(tmp_path / "train.tsv", [('"quoted"', "a"), ('say ""twice""', "b")])
    assert read_rows(path).texts == ['"quoted"', 'say ""twice""']


def test_tsv_row_with_a_tab_in_its_text_is_reported(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text('text\tlabel\n"a\tb"\tx\n')
    expect_error(path, 2, r"expected 2 fields as in the header, found 3", lambda: read_rows(path))


def test_csv_keeps_standard_quoting(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('text,label\n"a, ""b""\nc",x\nd,y\n')
    rows = read_rows(path)
    assert rows.texts == ['a, "b"\nc', "d"] and rows.lines == [2, 4]


# --- a single label, and other errors a user can cause (issue 17) -------------------------------------------


def test_training_file_with_a_single_label_is_refused(tmp_path):
    path = write_table(tmp_path / "train.csv", [("a", "pos"), ("b", " pos"), ("c", "pos")], header=("text", "y"))
    with pytest.raises(DataError) as caught:
        load_files(path, label_column="y")
    assert str(caught.value) == (
        f"{path}: every row has the label 'pos' in column 'y'; "
        "a classifier needs at least 2 different labels to learn from"
    )


def test_single_label_file_is_refused_before_the_test_file_is_read(tmp_path):
    train = write_table(tmp_path / "train.csv", [("a", "pos")])
    with pytest.raises(DataError, match=r"train\.csv: every row has the label 'pos'"):
        load_files(train, tmp_path / "missing.csv")


def test_path_that_is_a_directory(tmp_path):
    folder = tmp_path / "data.csv"
    folder.mkdir()
    with pytest.raises(DataError, match=r"data\.csv: is a directory, expected a file"):
        read_rows(folder)


def test_unreadable_file(tmp_path, monkeypatch):
    path = write_table(tmp_path / "train.csv", [("a", "x")])

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(type(path), "open", denied)  # the streaming reader opens the file, never reads it whole
    with pytest.raises(DataError, match=r"train\.csv: permission denied"):
        read_rows(path)


def test_file_name_with_a_nul_byte():
    with pytest.raises(DataError, match=r"not a usable file name \(embedded null byte\)"):
        read_rows("bad\0name.csv")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000, r"invalid JSON \(nested too deeply to read\)"),
        (
            '{"text": "a", "label": ' + "9" * 5000 + "}",
            r"invalid JSON \(Exceeds the limit \(4300 digits\) for integer string conversion\)$",
        ),
        ('{"text": "a\\ud800b", "label": "x"}', r"the text in 'text' holds a lone surrogate \\ud800 at character 2"),
        ('{"text": "a", "label": "\\udfff"}', r"the label in 'label' holds a lone surrogate \\udfff"),
        ('{"text": {"k": "' + "v" * 200 + '"}, "label": "x"}', r'must be a string, found \{"k": "v+\.\.\.$'),
    ],
)
def test_json_values_that_escape_as_other_exceptions(tmp_path, line, message):
    path = tmp_path / "train.jsonl"
    path.write_text('{"text": "ok", "label": "x"}\n' + line + "\n")
    expect_error(path, 2, message, lambda: read_rows(path))


def test_text_and_label_columns_must_differ(tmp_path):
    path = write_table(tmp_path / "train.csv", [("a", "x")])
    with pytest.raises(ValueError, match=r"text_column and label_column are both 'text'"):
        read_rows(path, text_column="text", label_column="text")


def test_public_names_still_import_from_files():
    from attnkit.data import reading
    from attnkit.data.classify import files

    assert files.DataError is reading.DataError
    assert files.read_utf8 is reading.read_utf8 and files.read_lines is reading.read_lines
    assert files.split_lines is reading.split_lines
