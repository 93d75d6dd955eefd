"""User pair files (TSV, CSV, JSONL): good files read, every bad row reported as file:line."""

import json

import pytest

from attnkit.data.seq2seq import DataError, PairFileError, load_pair_files, read_pairs


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
