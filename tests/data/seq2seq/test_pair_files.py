"""User pair files (TSV, CSV, JSONL): good files read, every bad row reported as file:line."""

import json

import pytest

from attnkit.data.seq2seq import DataError, PairFileError, load_pair_files, read_numbered_pairs, read_pairs
from attnkit.data.seq2seq.dataset import PairFile
from attnkit.data.seq2seq.files import pair_line


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_tsv_without_header(tmp_path):
    path = write(tmp_path, "p.tsv", 'hola\thello\n\n  "dijo"  \t "said"\n')
    assert read_pairs(path) == [("hola", "hello"), ('"dijo"', '"said"')]  # quotes are text in TSV


def test_tsv_header_names_the_columns(tmp_path):
    assert read_pairs(write(tmp_path, "a.tsv", "source\ttarget\nx\ty\n")) == [("x", "y")]
    path = write(tmp_path, "b.tsv", "id\tes\ten\n1\thola\thello\n")
    assert read_pairs(path, source_key="en", target_key="es") == [("hello", "hola")]


def test_csv_with_quoting(tmp_path):
    path = write(tmp_path, "p.csv", 'source,target\n"a, b","c ""d"""\n')
    assert read_pairs(path) == [("a, b", 'c "d"')]


def test_jsonl_with_default_and_given_keys(tmp_path):
    lines = [{"source": "a", "target": "b", "note": 1}, {"source": "c", "target": "d"}]
    path = write(tmp_path, "p.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert read_pairs(path) == [("a", "b"), ("c", "d")]
    path = write(tmp_path, "q.jsonl", json.dumps({"en": "hi", "es": "hola"}) + "\n")
    assert read_pairs(path, source_key="en", target_key="es") == [("hi", "hola")]


def test_every_bad_tsv_row_is_reported(tmp_path):
    path = write(tmp_path, "bad.tsv", "a\tb\na\tb\tc\nok\tfine\nx\t  \nlonely\n")
    with pytest.raises(PairFileError) as caught:
        read_pairs(path)
    assert caught.value.problems == [
        f"{path}:2: expected 2 tab-separated fields (source, target), found 3",
        f"{path}:4: empty target",
        f"{path}:5: expected 2 tab-separated fields (source, target), found 1",
    ]
    assert str(caught.value).splitlines() == caught.value.problems
    assert isinstance(caught.value, DataError) and isinstance(caught.value, ValueError)


def test_every_bad_jsonl_row_is_reported(tmp_path):
    text = "\n".join(
        ['{"source": "a", "target": "b"}', '{"source": "a"', '{"source": "a"}', '{"source": 3, "target": "b"}', "[1]"]
    )
    path = write(tmp_path, "bad.jsonl", text)
    with pytest.raises(PairFileError) as caught:
        read_pairs(path)
    problems = caught.value.problems
    assert [p.split(": ")[0] for p in problems] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert "invalid JSON" in problems[0]
    assert "no 'target' field" in problems[1]
    assert "'source' must be a string, found 3" in problems[2]
    assert "expected a JSON object" in problems[3]


def test_many_bad_rows_are_summarised(tmp_path):
    path = write(tmp_path, "many.tsv", "only-one-column\n" * 25)
    with pytest.raises(PairFileError) as caught:
        read_pairs(path)
    assert len(caught.value.problems) == 25
    message = str(caught.value).splitlines()
    assert len(message) == 21 and message[-1] == "... and 5 more bad rows"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("p.xlsx", b"a\tb\n", "cannot tell the file type"),
        ("empty.tsv", b"\n\n", "no pairs found"),
        ("latin.tsv", b"ok\tfine\ncaf\xe9\tcoffee\n", r"latin\.tsv:2: byte 0xe9 at column 4 is not valid UTF-8"),
    ],
)
def test_file_level_errors(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        read_pairs(path)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match=r"nope\.tsv: no such file"):
        read_pairs(tmp_path / "nope.tsv")


def test_load_pair_files_carves_validation_and_keeps_references(tmp_path):
    train = write(tmp_path, "train.tsv", "".join(f"w{i}\tW {i}\n" for i in range(200)))
    test = write(tmp_path, "test.tsv", "read\tR EH D\nread\tR IY D\ncat\tK AE T\n")
    data = load_pair_files(train, test=test, target_level="symbol")
    assert data.name == "train" and data.sizes == {"train": 190, "valid": 10, "test": 2}
    assert not {s for s, _ in data.train} & {s for s, _ in data.valid}
    assert load_pair_files(train, test=test).valid == data.valid  # the same file gives the same split
    assert data.test == [("read", "R EH D"), ("cat", "K AE T")]
    assert data.references_for("test") == [["R EH D", "R IY D"], ["K AE T"]]
    assert data.target_level == "symbol" and not data.shared_vocab


# --- lines end at "\n" only; errors that used to escape (issue 17) ------------------------------------------

BREAKERS = ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]  # str.splitlines() splits at these


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])  # the others are escaped in JSON strings
def test_jsonl_pairs_may_hold_unicode_line_separators(tmp_path, char):
    pairs = [(f"a{char}b", "x"), ("c", f"y{char}z"), ("d", "w")]
    text = "".join(json.dumps({"source": s, "target": t}, ensure_ascii=False) + "\n" for s, t in pairs)
    assert read_pairs(write(tmp_path, "p.jsonl", text)) == pairs


@pytest.mark.parametrize("char", BREAKERS)
def test_tsv_pairs_may_hold_unicode_line_separators(tmp_path, char):
    path = write(tmp_path, "p.tsv", f"a{char}b\tx\nc\ty{char}z\r\nd\tw\r\n")
    assert read_numbered_pairs(path) == [(1, (f"a{char}b", "x")), (2, ("c", f"y{char}z")), (3, ("d", "w"))]


def test_invalid_json_reason_does_not_double_at(tmp_path):
    path = write(tmp_path, "p.jsonl", '{"source": "a", "target": "b}\n')
    with pytest.raises(PairFileError) as caught:
        read_pairs(path)
    assert caught.value.problems == [f"{path}:1: invalid JSON (Unterminated string starting at column 27)"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("[" * 100_000, "invalid JSON (nested too deeply to read)"),
        (
            '{"source": 1' + "0" * 5000 + ', "target": "b"}',
            "invalid JSON (Exceeds the limit (4300 digits) for integer string conversion)",
        ),
        ('{"source": "a\\ud83d", "target": "b"}', "'source' holds a lone surrogate \\ud83d at character 2"),
        ('{"source": "a", "target": ["' + "x" * 100 + '"]}', "'target' must be a string, found [\"xxx"),
    ],
)
def test_json_rows_that_used_to_escape_are_reported(tmp_path, line, reason):
    path = write(tmp_path, "p.jsonl", '{"source": "a", "target": "b"}\n' + line + "\n")
    with pytest.raises(PairFileError) as caught:
        read_pairs(path)
    (problem,) = caught.value.problems
    assert problem.startswith(f"{path}:2: {reason}") and len(problem) < 200


def test_directory_and_bad_file_name(tmp_path):
    (tmp_path / "pairs.tsv").mkdir()
    with pytest.raises(DataError, match=r"pairs\.tsv: is a directory, expected a file"):
        read_pairs(tmp_path / "pairs.tsv")
    with pytest.raises(DataError, match=r"not a usable file name"):
        read_pairs("a\0b.tsv")


def test_holding_out_validation_must_leave_training_pairs(tmp_path):
    train = write(tmp_path, "two.tsv", "a\tb\nc\td\n")
    with pytest.raises(
        DataError, match=r"two\.tsv: holding out 90% of its 2 sources for validation leaves no training"
    ):
        load_pair_files(train, valid_fraction=0.9)


def test_load_pair_files_records_where_each_split_came_from(tmp_path):
    train = write(tmp_path, "train.tsv", "".join(f"w{i}\tW{i}\n" for i in range(40)))
    test = write(tmp_path, "test.jsonl", '{"en": "x", "es": "y"}\n')
    data = load_pair_files(train, test=test, source_key="en", target_key="es")
    assert data.files == {
        "train": PairFile(str(train), "en", "es"),
        "valid": PairFile(str(train), "en", "es"),
        "test": PairFile(str(test), "en", "es"),
    }
    assert pair_line(data.files["valid"], data.valid[0]) == int(data.valid[0][0][1:]) + 1
    assert pair_line(data.files["test"], ("x", "y")) == 1 and pair_line(data.files["test"], ("x", "z")) is None
