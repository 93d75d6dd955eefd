"""``delimiter`` for pair files (issue #26): a CSV-like file with another column separator reads the same pairs
as its TSV twin, in memory and as a stream; a bad separator, or one given for JSONL, is refused in one line."""

from __future__ import annotations

import pytest

from attnkit.data.reading import DataError
from attnkit.data.seq2seq import read_pairs
from attnkit.data.seq2seq.files import PairFileError, load_pair_files
from attnkit.data.seq2seq.pair_stream import PairFileStream

PAIRS = [("abbey", "AE B IY"), ("a; b", 'say "hi"'), ("ceci", "C EH CH IY")]


def write_semicolons(path):
    quoted = [
        '"' + text.replace('"', '""') + '"' if ";" in text or '"' in text else text for pair in PAIRS for text in pair
    ]
    rows = [";".join(quoted[i : i + 2]) for i in range(0, len(quoted), 2)]
    path.write_text("source;target\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_a_semicolon_file_reads_the_pairs_with_csv_quoting_whatever_its_suffix(tmp_path):
    path = write_semicolons(tmp_path / "pairs.txt")  # .txt alone would be read as TSV
    assert read_pairs(path, delimiter=";") == PAIRS
    with pytest.raises(PairFileError, match="expected 2 tab-separated fields"):
        read_pairs(path)


def test_a_tab_delimiter_reads_a_tsv_as_csv(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text('source\ttarget\n"a\tb"\tX\nc\tY\n', encoding="utf-8")
    assert read_pairs(path, delimiter="\t") == [("a\tb", "X"), ("c", "Y")]


def test_a_row_with_too_many_fields_names_the_separator_and_the_line(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("a;A\nb;B;extra\n", encoding="utf-8")
    with pytest.raises(
        PairFileError, match=r"pairs.csv:2: expected 2 ';'-separated fields \(source, target\), found 3"
    ):
        read_pairs(path, delimiter=";")


@pytest.mark.parametrize("bad", [";;", "", '"', "\n"])
def test_a_delimiter_that_is_not_one_plain_character_is_refused(tmp_path, bad):
    path = write_semicolons(tmp_path / "pairs.csv")
    with pytest.raises(ValueError, match="--delimiter must be one character"):
        read_pairs(path, delimiter=bad)


def test_a_delimiter_for_jsonl_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text('{"source": "a", "target": "A"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs.jsonl: --delimiter is for CSV-like files"):
        read_pairs(path, delimiter=";")
    with pytest.raises(DataError, match=r"pairs.jsonl: --delimiter is for CSV-like files"):
        PairFileStream(path, delimiter=";")  # refused when built, before a run writes anything


def test_load_pair_files_reads_every_split_with_the_delimiter_and_records_it(tmp_path):
    train = write_semicolons(tmp_path / "train.txt")
    valid = write_semicolons(tmp_path / "valid.txt")
    data = load_pair_files(train, valid, valid, delimiter=";")
    assert data.train == PAIRS and data.test == PAIRS
    assert {file.delimiter for file in data.files.values()} == {";"}


def test_a_streamed_semicolon_file_yields_the_pairs_of_its_tsv_twin(tmp_path):
    words = [f"w{i}" for i in range(200)]
    (tmp_path / "p.tsv").write_text("".join(f"{w}\t{w.upper()}\n" for w in words), encoding="utf-8")
    (tmp_path / "p.csv").write_text("".join(f"{w};{w.upper()}\n" for w in words), encoding="utf-8")
    tsv = PairFileStream(tmp_path / "p.tsv", valid_fraction=0.2, progress=False)
    semicolons = PairFileStream(tmp_path / "p.csv", valid_fraction=0.2, progress=False, delimiter=";")
    assert list(semicolons.training_pairs()) == list(tsv.training_pairs())
    assert semicolons.scan(cache=False)[0].valid == tsv.scan(cache=False)[0].valid
