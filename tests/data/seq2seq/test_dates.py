"""The dates task: deterministic by seed, well-posed (one answer per source), distinct dates per split."""

import datetime
import random

import pytest

from attnkit.data.seq2seq import build_tokenizers, load_data_set
from attnkit.data.seq2seq.dates import FORMATS, generate_dates, load_dates

pytest.importorskip("faker", reason="faker (attnkit[data]) is not installed")
pytest.importorskip("babel", reason="babel (attnkit[data]) is not installed")


@pytest.fixture(scope="module")
def data():
    return load_dates(train_size=400, valid_size=60, test_size=60, seed=1)


def test_sizes_and_iso_targets(data):
    assert data.sizes == {"train": 400, "valid": 60, "test": 60}
    for source, target in data.train + data.valid + data.test:
        date = datetime.date.fromisoformat(target)
        assert str(date.year) in source  # years are always written in full
        assert source == " ".join(source.split())  # plain single spaces only (babel writes U+202F, U+00A0)


def test_same_seed_same_pairs_other_seed_other_pairs(data):
    assert load_data_set("dates", train_size=400, valid_size=60, test_size=60, seed=1) == data
    assert load_dates(train_size=400, valid_size=60, test_size=60, seed=2).test != data.test


def test_splits_hold_distinct_dates(data):
    train, valid, test = ({t for _, t in split} for split in (data.train, data.valid, data.test))
    assert len(train) == 400 and len(valid) == 60 and len(test) == 60
    assert not train & test and not train & valid and not valid & test


def test_several_locales_and_formats_appear():
    pairs = generate_dates(300, seed=0)
    words = {w.strip(",.").lower() for s, _ in pairs for w in s.split()}
    assert {"march", "mars", "märz", "marzo", "março", "maart"} & words  # English, French, German, ...
    assert sum(s.count("/") == 2 for s, _ in pairs) > 0 and sum(s.count(".") == 2 for s, _ in pairs) > 0


def test_every_written_form_has_one_answer():
    # each format of each locale, over dates including day/month swaps: no string may denote two dates
    from babel.dates import format_date

    rng = random.Random(0)
    dates = [datetime.date(1900, 1, 1) + datetime.timedelta(days=rng.randrange(73_000)) for _ in range(60)]
    dates += [datetime.date(1997, 3, 4), datetime.date(1997, 4, 3), datetime.date(2003, 1, 12)]
    meaning: dict[str, datetime.date] = {}
    for date in dates:
        for locale, formats in FORMATS.items():
            for fmt in formats:
                written = " ".join(format_date(date, fmt, locale=locale).split())
                assert meaning.setdefault(written, date) == date, f"{written!r} ({locale}, {fmt}) is ambiguous"


def test_character_tokenizers(data):
    source, target = build_tokenizers(data)
    assert (source.level, target.level) == ("char", "char")
    assert set(target.symbols[4:]) == set("0123456789-")
    assert all(source.decode(source.encode(s)) == s for s, _ in data.train)
    assert all(target.decode(target.encode(t)) == t for _, t in data.test)


def test_bad_sizes():
    with pytest.raises(ValueError, match="train_size must be non-negative"):
        load_dates(train_size=-1)
    with pytest.raises(ValueError, match="count must lie in"):
        generate_dates(50_000)
