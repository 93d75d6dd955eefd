"""Built-in sequence-to-sequence data sets by name (layer 5).

data = load_data_set("cmudict")          # Seq2SeqData; options go to the data set's loader
load_data_set("dates", train_size=500)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnkit.data.reading import DataError
from attnkit.data.seq2seq.bible import load_bible
from attnkit.data.seq2seq.cmudict import load_cmudict
from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.data.seq2seq.dates import load_dates

__all__ = ["DATA_SETS", "BuiltinDataSet", "data_set_names", "load_data_set"]


@dataclass(frozen=True)
class BuiltinDataSet:
    """A built-in data set: its loader (keyword options pass through) and a one-line description."""

    name: str
    load: Callable[..., Seq2SeqData]
    description: str


DATA_SETS: dict[str, BuiltinDataSet] = {
    entry.name: entry
    for entry in (
        BuiltinDataSet("cmudict", load_cmudict, "English grapheme-to-phoneme, CMU Pronouncing Dictionary (WER/PER)"),
        BuiltinDataSet("dates", load_dates, "human-readable dates in 8 locales -> ISO YYYY-MM-DD (quick demo)"),
        BuiltinDataSet("bible-en-es", load_bible, "English (KJV) -> Spanish (Reina-Valera 1909) verses (BLEU/chrF)"),
    )
}


def data_set_names() -> list[str]:
    """The names :func:`load_data_set` accepts."""
    return list(DATA_SETS)


def load_data_set(name: str, **options) -> Seq2SeqData:
    """Load built-in data set ``name``; ``options`` go to its loader (e.g. ``load_data_set("dates", train_size=500)``).

    Raises:
        DataError: for an unknown name, listing the known ones.
    """
    if name not in DATA_SETS:
        raise DataError(f"unknown data set {name!r}; built-in data sets: {', '.join(DATA_SETS)}")
    return DATA_SETS[name].load(**options)
