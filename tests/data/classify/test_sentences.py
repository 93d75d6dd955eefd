"""Sentence splitting for HAN: pysbd on punctuated text, pseudo-sentences otherwise, and the sentence/word caps."""

import pytest

from attnkit.data.classify.sentences import SentenceSplitter, encode_documents, pseudo_sentences


def fake_encode(sentences):
    """One id per word: the word's length (enough to check grouping and caps)."""
    return [[len(word) for word in sentence.split()] for sentence in sentences]


def test_segmenter_respects_abbreviations_decimals_and_quotes():
    text = 'Dr. Smith paid $3.50 for it at 5 p.m. yesterday. He said: "Fine!" Then he left?! Yes.'
    assert SentenceSplitter().split(text) == [
        "Dr. Smith paid $3.50 for it at 5 p.m. yesterday.",
        'He said: "Fine!"',
        "Then he left?!",
        "Yes.",
    ]


def test_line_breaks_end_sentences_and_titles_stand_alone():
    text = "Ad sales boost Time Warner profit\n\nQuarterly profits jumped 76%. Sales rose 2%.\n  \nThe end"
    assert SentenceSplitter().split(text) == [
        "Ad sales boost Time Warner profit",
        "Quarterly profits jumped 76%.",
        "Sales rose 2%.",
        "The end",
    ]


def test_empty_documents_have_no_sentences():
    splitter = SentenceSplitter()
    assert splitter.split("") == [] and splitter.split(" \n\t ") == []
    assert SentenceSplitter(punctuated=False).split("   ") == []


def test_pseudo_sentences_for_unpunctuated_text():
    text = "one two three four five six seven"
    assert pseudo_sentences(text, 3) == ["one two three", "four five six", "seven"]
    splitter = SentenceSplitter(punctuated=False, words_per_pseudo_sentence=2)
    assert splitter.split_batch([text, "a b"]) == [["one two", "three four", "five six", "seven"], ["a b"]]
    with pytest.raises(ValueError, match="at least 1"):
        pseudo_sentences(text, 0)


def test_encode_documents_keeps_alignment_and_applies_caps():
    documents = [["aa b ccc dddd", "e", "ff gg"], [], ["h i j"]]
    assert encode_documents(documents, fake_encode) == [[[2, 1, 3, 4], [1], [2, 2]], [], [[1, 1, 1]]]
    capped = encode_documents(documents, fake_encode, max_sentences=2, max_words=2)
    assert capped == [[[2, 1], [1]], [], [[1, 1]]]


def test_encode_documents_calls_the_encoder_once_with_only_kept_sentences():
    calls = []

    def encode(sentences):
        calls.append(list(sentences))
        return fake_encode(sentences)

    encode_documents([["a", "b", "c"], ["d"]], encode, max_sentences=2)
    assert calls == [["a", "b", "d"]]


def test_bad_caps():
    with pytest.raises(ValueError, match="max_words must be at least 1"):
        encode_documents([["a"]], fake_encode, max_words=0)


def test_split_remembers_documents_without_sharing_its_lists(monkeypatch):
    from attnkit.data.classify import sentences

    monkeypatch.setattr(sentences, "CACHED", 2)
    splitter = sentences.SentenceSplitter()
    first = splitter.split("It was stale. I returned it!")
    assert first == ["It was stale.", "I returned it!"]
    first.append("changed by the caller")
    calls = []
    monkeypatch.setattr(splitter, "_segment", lambda paragraph: calls.append(paragraph) or [paragraph])
    assert splitter.split("It was stale. I returned it!") == ["It was stale.", "I returned it!"]  # remembered
    assert calls == []
    splitter.split("One. Two.")
    splitter.split("Three. Four.")  # the oldest (the first text) leaves the cache
    assert splitter.split("It was stale. I returned it!") == ["It was stale. I returned it!"]  # segmented anew
    assert len(calls) == 3


def test_end_marks_glued_to_the_next_sentence_and_cjk_full_stops_end_sentences():
    """#37: pysbd reads "product.Holds" as one word and does not know Japanese 。; abbreviations stay whole."""
    text = "Better than whole wheat!It's a great product.Holds shape well.I like it. Mr.Smith and e.g.The U.S.Army."
    assert SentenceSplitter().split(text) == [
        "Better than whole wheat!",
        "It's a great product.",
        "Holds shape well.",
        "I like it.",
        "Mr.Smith and e.g.The U.S.Army.",
    ]
    assert SentenceSplitter().split("おいしいです。また買います！「本当？」はい") == [
        "おいしいです。",
        "また買います！",
        "「本当？」",
        "はい",
    ]
    assert SentenceSplitter().split("I love it!!!Really.") == ["I love it!!!", "Really."]
