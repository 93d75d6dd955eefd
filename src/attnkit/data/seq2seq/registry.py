"""Built-in sequence-to-sequence data sets by name (layer 5).

data = load_data_set("cmudict")          # Seq2SeqData; options go to the data set's loader
load_data_set("dates", train_size=500)
"""

from __future__ import annotations

from attnkit.data.builtin import BuiltinDataSet, load_from, table
from attnkit.data.seq2seq.bible import load_bible
from attnkit.data.seq2seq.cmudict import load_cmudict
from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.data.seq2seq.dates import load_dates

__all__ = ["DATA_SETS", "BuiltinDataSet", "data_set_names", "load_data_set"]

DATA_SETS: dict[str, BuiltinDataSet] = table(
    BuiltinDataSet("cmudict", "English grapheme-to-phoneme, CMU Pronouncing Dictionary (WER/PER)", load_cmudict),
    BuiltinDataSet("dates", "human-readable dates in 8 locales -> ISO YYYY-MM-DD (quick demo)", load_dates),
    BuiltinDataSet("bible-en-es", "English (KJV) -> Spanish (Reina-Valera 1909) verses (BLEU/chrF)", load_bible),
)


def data_set_names() -> list[str]:
    """The names :func:`load_data_set` accepts."""
    return list(DATA_SETS)


def load_data_set(name: str, **options) -> Seq2SeqData:
    """Load built-in data set ``name``; ``options`` go to its loader. DataError for an unknown name, listing the
    known ones."""
    return load_from(DATA_SETS, name, **options)
