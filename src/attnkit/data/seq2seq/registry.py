"""Built-in sequence-to-sequence tasks by name (layer 5).

data = load_task("cmudict")          # Seq2SeqData; options go to the task's loader
load_task("dates", train_size=500)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from attnkit.data.reading import DataError
from attnkit.data.seq2seq.bible import load_bible
from attnkit.data.seq2seq.cmudict import load_cmudict
from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.data.seq2seq.dates import load_dates

__all__ = ["TASKS", "Task", "load_task", "task_names"]


@dataclass(frozen=True)
class Task:
    """A built-in task: its loader (keyword options pass through) and a one-line description."""

    name: str
    load: Callable[..., Seq2SeqData]
    description: str


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task("cmudict", load_cmudict, "English grapheme-to-phoneme, CMU Pronouncing Dictionary (WER/PER)"),
        Task("dates", load_dates, "human-readable dates in 8 locales -> ISO YYYY-MM-DD (quick demo)"),
        Task("bible-en-es", load_bible, "English (KJV) -> Spanish (Reina-Valera 1909) verses (BLEU/chrF)"),
    )
}


def task_names() -> list[str]:
    """Names of the built-in tasks."""
    return list(TASKS)


def load_task(name: str, **options) -> Seq2SeqData:
    """Load built-in task ``name``; ``options`` go to its loader (e.g. ``load_task("dates", train_size=500)``).

    Raises:
        DataError: for an unknown name, listing the known ones.
    """
    if name not in TASKS:
        raise DataError(f"unknown sequence-to-sequence task {name!r}; built-in tasks: {', '.join(TASKS)}")
    return TASKS[name].load(**options)
