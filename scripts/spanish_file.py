"""Write the small Spanish classification file of issue #38's "data nobody here tuned on" check.

2,000 verses of the Reina-Valera 1909 (the ``bible-en-es`` data's Spanish side), 500 from each of four book groups
(law, prophets, gospels, letters), labelled by group; about a fifth of the chapters are held out whole (so that a
chapter's neighbouring verses never straddle the split). Both choices are salted SHA-256 orders, so the file is the
same on every machine::

    python -m scripts.spanish_file runs/es        # writes runs/es/train.csv and runs/es/test.csv
    attnkit train classify --data runs/es/train.csv --test runs/es/test.csv --seed 0 --out runs/es/today
    python -m scripts.spanish_file runs/es --check runs/es/today   # its accuracy, TF-IDF + LR's, faithfulness

Needs the SWORD modules of ``bible-en-es`` (``apt-get install sword-text-kjv sword-text-sparv``) and pysword.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
from pathlib import Path

GROUPS = {
    "law": ("Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy"),
    "prophets": (
        *("Isaiah", "Jeremiah", "Ezekiel", "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah", "Micah"),
        *("Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah", "Malachi"),
    ),
    "gospels": ("Matthew", "Mark", "Luke", "John"),
    "letters": (
        *("Romans", "I Corinthians", "II Corinthians", "Galatians", "Ephesians", "Philippians", "Colossians"),
        *("I Thessalonians", "II Thessalonians", "I Timothy", "II Timothy", "Titus", "Philemon", "Hebrews"),
        *("James", "I Peter", "II Peter", "I John", "II John", "III John", "Jude"),
    ),
}
PER_GROUP, TEST_SHARE, SALT = 500, 0.2, "attnkit-spanish-file-v1"


def _order(key: str) -> str:
    return hashlib.sha256(f"{SALT} {key}".encode()).hexdigest()


def _held_out(book: str, chapter: int) -> bool:
    """Whether a chapter is in the test file: the first ``TEST_SHARE`` of the salted hash order."""
    return int(_order(f"{book} {chapter}")[:8], 16) < TEST_SHARE * 16**8


def spanish_rows() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(text, label) rows of the training and the test file."""
    from attnkit.data.cache import cache_dir
    from attnkit.data.seq2seq.bible import CACHE_FILENAME, build_cache, read_cache

    path = cache_dir() / CACHE_FILENAME
    if not path.is_file():
        build_cache(path)
    verses = read_cache(path)
    train, test = [], []
    for label, books in GROUPS.items():
        group = [v for v in verses if v.book in books]
        chosen = sorted(group, key=lambda v: _order(f"{v.book} {v.chapter} {v.verse}"))[:PER_GROUP]
        for verse in chosen:
            (test if _held_out(verse.book, verse.chapter) else train).append((verse.spanish, label))
    return sorted(train, key=lambda row: _order(row[0])), sorted(test, key=lambda row: _order(row[0]))


def check(out: Path, run: Path, documents: int = 40) -> dict:
    """A run's test accuracy beside TF-IDF + LR's on the same split, and its faithfulness on ``documents`` test
    verses (the faithful-attention experiment's methods and erasure, :data:`CONFIRM_METHODS`)."""
    from attnkit.experiments.faithful_attention.run import CONFIRM_METHODS, STEPS, _figures
    from attnkit.experiments.faithfulness.measure import measure_documents, sample_documents, summarise_documents
    from attnkit.tasks.classify.baselines import tfidf_logreg_accuracy
    from attnkit.tasks.classify.data import load_data
    from attnkit.tasks.classify.inference import load_classifier

    data = load_data(str(out / "train.csv"), test_path=str(out / "test.csv"))
    classifier = load_classifier(run / "best", device="cpu")
    texts, labels = data.test_texts, data.test_labels
    numbers = sample_documents(len(texts), documents)
    records = measure_documents(classifier, texts, labels, numbers, methods=CONFIRM_METHODS, steps=STEPS)
    figures = _figures(summarise_documents(records))
    metrics = json.loads((run / "metrics.json").read_text())
    baseline = tfidf_logreg_accuracy(data.train_texts, data.train_labels, texts, labels, seed=0)
    return {"test_accuracy": metrics["test"]["accuracy"], "tfidf_lr": 100 * baseline, **figures}


def main() -> None:
    """Write ``train.csv`` and ``test.csv`` (columns ``text``, ``label``) into the directory given; with ``--check
    RUN``, print that run's figures on them instead."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for train.csv and test.csv")
    parser.add_argument("--check", type=Path, metavar="RUN", help="a run trained on the files: print its figures")
    args = parser.parse_args()
    out = args.out
    if args.check:
        print(json.dumps(check(out, args.check), indent=1))
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in zip(("train", "test"), spanish_rows(), strict=True):
        with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("text", "label"))
            writer.writerows(rows)
        print(f"{out / f'{name}.csv'}: {len(rows)} verses")


if __name__ == "__main__":
    main()
