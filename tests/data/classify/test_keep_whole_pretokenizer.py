"""The keep-whole pre-tokeniser: contractions, URLs, e-mails, handles, hashtags and numbers stay whole for every
tokeniser kind; tokens() still lines up with the ids; tokenizer.json round-trips; old tokenizer.json files behave as
before."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.data.classify.tokenization import KEEP_WHOLE_PATTERN, KINDS, PRETOKENIZERS, UNK, TextTokenizer

FIXTURES = Path(__file__).parents[1] / "fixtures" / "old_tokenizers"

WHOLE = [
    "don't",
    "isn't",
    "I'm",
    "we'll",
    "rock’n’roll",
    "https://example.com/a/b?c=1&d=2",
    "www.attnkit.org/docs",
    "jo.doe+news@mail.example.org",
    "@jo_doe",
    "#nlp",
    "3.5",
    "1,000",
    "1,000.50",
    "10:30",
    "2nd",
    "U.S.",
    "e.g.",
]
SENTENCE = (
    "I don't think it isn't true; I'm sure we'll see rock’n’roll at https://example.com/a/b?c=1&d=2. "
    "Or www.attnkit.org/docs, or mail jo.doe+news@mail.example.org (cc @jo_doe) about #nlp: 3.5 of 1,000 "
    "and 1,000.50 at 10:30 on the 2nd, in the U.S. and e.g. here."
)
TEXTS = [SENTENCE, "the cat sat on the mat, the dog didn't.", "a dog and a cat: the end!"] * 4


def _pretokens(text: str) -> list[tuple[str, tuple[int, int]]]:
    from tokenizers import Regex, pre_tokenizers

    rule = pre_tokenizers.Split(Regex(KEEP_WHOLE_PATTERN), behavior="removed", invert=True)
    return rule.pre_tokenize_str(text)


def test_the_rule_cuts_a_sentence_as_documented():
    words = [w for w, _ in _pretokens(SENTENCE)]
    for whole in WHOLE:
        assert whole in words, whole
    # trailing punctuation is not part of a URL, e-mail or abbreviation's neighbour
    assert words[words.index("https://example.com/a/b?c=1&d=2") + 1] == "."
    assert words[words.index("www.attnkit.org/docs") + 1] == ","
    assert words[words.index("@jo_doe") + 1] == ")"
    assert [w for w, _ in _pretokens("'quoted' dogs' C# a@b x@y. 3.5% -2")] == [
        "'",
        "quoted",
        "'",
        "dogs",
        "'",
        "C",
        "#",
        "a",
        "@b",
        "x",
        "@y",
        ".",
        "3.5",
        "%",
        "-",
        "2",
    ]


@pytest.fixture(scope="module", params=KINDS)
def trained(request):
    """A tokeniser of each kind whose vocabulary is big enough to hold every word of TEXTS whole."""
    return TextTokenizer.train(TEXTS, kind=request.param, vocab_size=2000, min_frequency=1)


def test_every_kind_keeps_the_cases_whole(trained):
    assert trained.pretokenizer == "keep-whole"
    for whole in WHOLE:
        ids = trained.encode(whole)
        assert trained.tokens(whole) == [whole]
        assert len(ids) == 1 and ids[0] != trained.unk_id
    assert trained.id_to_token(trained.encode("don't")[0]) == "don't"  # lowercased, one vocabulary entry


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_small_subword_vocabularies_cut_kept_words_into_pieces_that_stay_inside_them(kind):
    tokenizer = TextTokenizer.train(TEXTS, kind=kind, vocab_size=80, min_frequency=1)
    text = SENTENCE.lower()  # lowercasing keeps offsets, so the rule's spans index the same string
    spans = [span for _, span in _pretokens(text)]
    encoding = tokenizer._tokenizer.encode(text, add_special_tokens=False)
    assert len(encoding.ids) > len(spans)  # some words are cut
    for (start, end), token in zip(encoding.offsets, encoding.tokens, strict=True):
        word = next(i for i, (s, e) in enumerate(spans) if s <= start and end <= e)  # raises if a piece crosses
        first = spans[word][0] == start
        if kind == "wordpiece" and token != UNK:
            assert token.startswith("##") != first  # one WordPiece word: a head, then '##' continuations


@pytest.mark.parametrize("kind", KINDS)
def test_whitespace_pretokenizer_is_the_old_rule(kind):
    tokenizer = TextTokenizer.train(TEXTS, kind=kind, vocab_size=2000, min_frequency=1, pretokenizer="whitespace")
    assert tokenizer.pretokenizer == "whitespace"
    assert tokenizer.tokens("don't") == ["don", "'", "t"]
    assert tokenizer.tokens("https://example.com/a") == ["https", "://", "example", ".", "com", "/", "a"]


def test_lowercase_off_still_keeps_upper_case_urls_whole():
    cased = TextTokenizer.train(["HTTP://EXAMPLE.COM/Path is Don't"] * 3, kind="word", min_frequency=1, lowercase=False)
    assert cased.tokens("HTTP://EXAMPLE.COM/Path is Don't") == ["HTTP://EXAMPLE.COM/Path", "is", "Don't"]


TOKENIZERS = {kind: TextTokenizer.train(TEXTS, kind=kind, vocab_size=300, min_frequency=1) for kind in KINDS}


TEXT_PARTS = st.sampled_from(
    [*WHOLE, "the", "cat", "'", "’", ".", ",", "@", "#", "://", "-", "1", "ﬁ", "Ä", "é", "ｃａｔ", "\u00a0", "😀"]
)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(TEXT_PARTS, max_size=12), spaces=st.lists(st.sampled_from(["", " ", "  ", "\n"]), max_size=12))
def test_tokens_line_up_with_ids(parts, spaces):
    # predict/explain show tokens(text)[i] beside id i: same length, and each piece is the text of its id
    text = "".join(p + s for p, s in zip(parts, [*spaces, *[" "] * len(parts)], strict=False))
    for kind, tokenizer in TOKENIZERS.items():
        ids, pieces = tokenizer.encode(text), tokenizer.tokens(text)
        assert len(ids) == len(pieces), (kind, text)
        for token_id, piece in zip(ids, pieces, strict=True):
            assert piece and piece in text
            if token_id != tokenizer.unk_id and piece.isascii():  # NFKC may rewrite non-ASCII pieces
                assert tokenizer.id_to_token(token_id).removeprefix("##") == piece.lower(), (kind, text)


@pytest.mark.parametrize("kind", KINDS)
def test_tokenizer_json_round_trips_with_the_same_pieces(tmp_path, kind):
    tokenizer = TOKENIZERS[kind]
    loaded = TextTokenizer.load(tokenizer.save(tmp_path).parent)
    assert loaded.pretokenizer == "keep-whole"
    texts = [*TEXTS, "unseen words: https://new.example.net/x and @someone's #tag 7.25"]
    assert loaded.encode_batch(texts) == tokenizer.encode_batch(texts)
    assert [loaded.tokens(t) for t in texts] == [tokenizer.tokens(t) for t in texts]
    assert json.loads((tmp_path / "tokenizer.json").read_text())["pre_tokenizer"]["pattern"] == {
        "Regex": KEEP_WHOLE_PATTERN
    }


@pytest.mark.parametrize("kind", KINDS)
def test_tokenizer_json_written_by_the_old_code_behaves_as_before(kind):
    # fixtures/old_tokenizers: saved by TextTokenizer.train before the keep-whole rule (commit 5ff7602), with the
    # ids and pieces that code gave for the probe texts
    expected = json.loads((FIXTURES / "expected.json").read_text())
    old = TextTokenizer.load(FIXTURES / kind)
    assert old.pretokenizer == "whitespace" and old.kind == kind
    assert old.encode_batch(expected["probe"]) == expected["expected"][kind]["ids"]
    assert [old.tokens(p) for p in expected["probe"]] == expected["expected"][kind]["tokens"]
    assert old.tokens("don't") == ["don", "'", "t"]


def test_bad_pretokenizer_and_custom_rules():
    with pytest.raises(ValueError, match="pretokenizer must be one of"):
        TextTokenizer.train(TEXTS, pretokenizer="bert")
    from tokenizers import pre_tokenizers

    custom = TextTokenizer.train(TEXTS, kind="word", min_frequency=1)
    custom._tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    assert TextTokenizer(custom._tokenizer).pretokenizer == "custom"
    assert set(PRETOKENIZERS) == {"keep-whole", "whitespace"}
