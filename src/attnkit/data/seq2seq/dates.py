"""The ``dates`` task: human-readable dates to ISO ``YYYY-MM-DD`` (layer 5), the quick demo and test fixture.

Dates are drawn by ``faker`` (seeded) between 1900-01-01 and 2099-12-31 and written by ``babel`` in one of eight
locales and several formats — ``"Tuesday, March 4, 1997"``, ``"4. März 1997"``, ``"2 de mar. de 1997"``,
``"03/04/1997"`` -> ``"1997-03-04"``. Both sides are tokenised by character.

Every source has exactly one answer: years are always written in full, and each numeric layout belongs to one
convention only (slashes month-first as in the US, dots day-first as in Germany, dashes day-first as in the
Netherlands). The three splits hold distinct dates, so no test date is seen in training under another format.
Unicode spaces that babel writes (no-break, narrow no-break) become plain spaces.
"""

from __future__ import annotations

import datetime
import re

from attnkit.data.seq2seq.dataset import Pair, Seq2SeqData

__all__ = ["FORMATS", "generate_dates", "load_dates"]

# locale -> babel format names or patterns (see babel.dates.format_date)
FORMATS: dict[str, tuple[str, ...]] = {
    "en_US": ("medium", "long", "full", "MM/dd/y", "M/d/y", "d MMM y", "MMMM d y", "EEE, MMM d, y"),
    "en_GB": ("medium", "long", "full", "d MMMM, y", "dd MMM y", "EEEE d MMMM y"),
    "fr_FR": ("medium", "long", "full"),
    "de_DE": ("medium", "long", "full", "d. MMM y"),
    "es_ES": ("medium", "long", "full"),
    "it_IT": ("medium", "long", "full"),
    "pt_BR": ("medium", "long", "full"),
    "nl_NL": ("medium", "long", "full", "dd-MM-y"),
}
START = datetime.date(1900, 1, 1)
END = datetime.date(2099, 12, 31)
_SPACES = re.compile(r"\s+")


def generate_dates(count: int, *, seed: int = 0, start: datetime.date = START, end: datetime.date = END) -> list[Pair]:
    """``count`` pairs ``(written date, ISO date)`` with distinct dates, the same for the same arguments.

    Raises:
        ValueError: when ``count`` exceeds half the days in ``[start, end]`` (drawing distinct dates would crawl).
    """
    from babel.dates import format_date
    from faker import Faker

    days = (end - start).days + 1
    if not 0 <= count <= days // 2:
        raise ValueError(f"count must lie in [0, {days // 2}] for dates between {start} and {end}, got {count}")
    fake = Faker()
    fake.seed_instance(seed)
    choices = [(locale, fmt) for locale, formats in FORMATS.items() for fmt in formats]
    seen: set[datetime.date] = set()
    pairs = []
    while len(pairs) < count:
        date = fake.date_between_dates(date_start=start, date_end=end)
        if date in seen:
            continue
        seen.add(date)
        locale, fmt = fake.random.choice(choices)
        written = _SPACES.sub(" ", format_date(date, fmt, locale=locale)).strip()
        pairs.append((written, date.isoformat()))
    return pairs


def load_dates(
    *, train_size: int = 10_000, valid_size: int = 1_000, test_size: int = 1_000, seed: int = 0
) -> Seq2SeqData:
    """The dates task with the given split sizes; the same ``seed`` gives the same pairs."""
    for name, size in (("train_size", train_size), ("valid_size", valid_size), ("test_size", test_size)):
        if size < 0:
            raise ValueError(f"{name} must be non-negative, got {size}")
    pairs = generate_dates(train_size + valid_size + test_size, seed=seed)
    return Seq2SeqData(
        name="dates",
        test=pairs[:test_size],
        valid=pairs[test_size : test_size + valid_size],
        train=pairs[test_size + valid_size :],
        source_level="char",
        target_level="char",
    )
