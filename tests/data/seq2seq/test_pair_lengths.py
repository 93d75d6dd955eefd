"""Length limits on seq2seq pairs: long pairs skipped with counts per split, or refused at file:line (strict)."""

import pytest

from attnkit.data.seq2seq import (
    DEFAULT_MAX_SOURCE_LENGTH,
    DEFAULT_MAX_TARGET_LENGTH,
    DataError,
    Seq2SeqData,
    Vocab,
    build_tokenizers,
    encode_pairs,
    find_long_pairs,
    limit_pair_lengths,
    load_data_set,
    load_pair_files,
)

CHARS = Vocab.build(["abcdefghijklmnopqrstuvwxyz "], level="char")  # one token per character
WORDS = Vocab.build(["a b c"], level="symbol")  # one token per whitespace-separated word


def test_find_long_pairs_counts_tokens_not_characters():
    pairs = [("abc", "a b"), ("abcd", "a"), ("ab", "a b c"), ("abcdefgh", "a b c a b c")]
    found = find_long_pairs(pairs, CHARS, WORDS, max_source_length=3, max_target_length=2)
    assert [(p.index, p.side, p.length, p.limit) for p in found] == [
        (1, "source", 4, 3),
        (2, "target", 3, 2),
        (3, "source", 8, 3),  # both sides over: the source is reported
    ]
    assert find_long_pairs(pairs, CHARS, WORDS, max_source_length=8, max_target_length=6) == []


def _data():
    return Seq2SeqData(
        name="toy",
        train=[("ab", "a"), ("abcdef", "a"), ("a", "a b c a b c a"), ("abc", "a b")],
        valid=[("abcdefgh", "a"), ("b", "b")],
        test=[("c", "c")],
        source_level="char",
        target_level="symbol",
    )


def test_limit_pair_lengths_skips_and_counts_per_split():
    data = _data()
    limited = limit_pair_lengths(data, CHARS, WORDS, max_source_length=4, max_target_length=5)
    assert limited.data.train == [("ab", "a"), ("abc", "a b")]
    assert limited.data.valid == [("b", "b")] and limited.data.test == [("c", "c")]
    assert limited.skipped == {"train": 2, "valid": 1, "test": 0} and limited.skipped_total == 3
    assert limited.message() == "skipped 3 pairs longer than 4 source / 5 target tokens (train 2, valid 1)"
    assert data.sizes == {"train": 4, "valid": 2, "test": 1}  # the input is not changed
    for split in ("train", "valid", "test"):  # the kept pairs come back encoded, as encode_pairs would
        expected = encode_pairs(limited.data.split(split), CHARS, WORDS)
        assert limited.encoded[split].sources == expected.sources
        assert limited.encoded[split].targets == expected.targets
    assert limited.encoded["train"].lengths == [2 + 2, 3 + 3]
    kept = limit_pair_lengths(data, CHARS, WORDS, max_source_length=8, max_target_length=7)
    assert kept.skipped_total == 0 and kept.data.sizes == data.sizes
    assert kept.message() == "skipped 0 pairs longer than 8 source / 7 target tokens"


def test_strict_refuses_at_file_and_line(tmp_path):
    long = "x" * 5000
    lines = [f"w{i}\tv{i}" for i in range(60)]
    lines[17] = f"{long}\tshort"
    lines[41] = f"short\t{long}"
    train = tmp_path / "train.tsv"
    train.write_text("\n\n" + "\n".join(lines) + "\n", encoding="utf-8")  # two blank lines first
    data = load_pair_files(train, valid_fraction=0.0)
    source_tok, target_tok = build_tokenizers(data)
    with pytest.raises(DataError) as caught:
        limit_pair_lengths(data, source_tok, target_tok, strict=True)
    assert str(caught.value) == (
        f"{train}:20: the source has 5000 tokens, over the limit of 256 source tokens "
        "(2 pairs in all are over the limits)"
    )
    limited = limit_pair_lengths(data, source_tok, target_tok)
    assert limited.skipped == {"train": 2, "valid": 0, "test": 0} and limited.data.sizes["train"] == 58
    assert all(len(s) <= 256 and len(t) <= 256 for s, t in limited.data.train)


def test_strict_finds_the_line_of_a_carved_validation_pair(tmp_path):
    train = tmp_path / "train.tsv"
    train.write_text("".join(f"w{i}\tv{i}\n" for i in range(99)) + "toolongsource\tv\n", encoding="utf-8")
    data = load_pair_files(train, valid_fraction=0.5)
    where = "valid" if ("toolongsource", "v") in data.valid else "train"
    with pytest.raises(
        DataError, match=rf"^{train}:100: the source has 13 tokens, over the limit of 12 source tokens$"
    ):
        limit_pair_lengths(data, CHARS, CHARS, max_source_length=12, strict=True)
    assert limit_pair_lengths(data, CHARS, CHARS, max_source_length=12).skipped[where] == 1


def test_strict_without_files_names_the_task_split_and_pair():
    with pytest.raises(
        DataError, match=r"^toy train split pair 2: the source has 6 tokens, over the limit of 4 source"
    ):
        limit_pair_lengths(_data(), CHARS, WORDS, max_source_length=4, max_target_length=7, strict=True)


def test_every_training_pair_too_long():
    data = Seq2SeqData(name="toy", train=[("abc", "a")], valid=[], test=[])
    with pytest.raises(DataError, match=r"^toy train split: every training pair is longer than 2 source / 256 target"):
        limit_pair_lengths(data, CHARS, WORDS, max_source_length=2)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_limits_are_checked(bad):
    with pytest.raises(ValueError, match=rf"max_target_length must be a whole number of tokens >= 1, got {bad!r}"):
        find_long_pairs([("a", "a")], CHARS, WORDS, max_target_length=bad)
    with pytest.raises(ValueError, match=r"max_source_length must be"):
        limit_pair_lengths(_data(), CHARS, WORDS, max_source_length=bad)


@pytest.mark.parametrize(
    "name",
    [
        "dates",
        pytest.param("cmudict", marks=pytest.mark.slow),
        pytest.param("bible-en-es", marks=pytest.mark.slow),
    ],
)
def test_defaults_keep_every_pair_of_the_builtin_tasks(name):
    try:
        data = load_data_set(name)
    except (DataError, ImportError) as error:  # missing package or SWORD modules
        pytest.skip(f"{name} is not available here: {error}")
    source_tok, target_tok = build_tokenizers(data)
    limited = limit_pair_lengths(data, source_tok, target_tok)
    assert (DEFAULT_MAX_SOURCE_LENGTH, DEFAULT_MAX_TARGET_LENGTH) == (256, 256)
    assert limited.skipped_total == 0 and limited.data.sizes == data.sizes
