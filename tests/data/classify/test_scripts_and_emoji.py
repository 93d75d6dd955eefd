"""The word tokeniser and the world's scripts (issue #26): emoji are tokens of their own, never glued to
punctuation; Chinese and Japanese runs without spaces give one token per character; a tokeniser saved with the
previous keep-whole rule is still recognised and keeps splitting as it was trained."""

from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from attnkit.data.classify.tokenization import KEEP_WHOLE_PATTERN_V1, UNK, TextTokenizer

TEXTS = [
    "I am angry😡. Really!!",
    "我爱北京天安门",
    "日本語のテキスト",
    "👍🏽 family 👨‍👩‍👧 ok, don't",
    "한국어 텍스트",
] * 3


def test_emoji_punctuation_and_cjk_are_split_sensibly(tmp_path):
    tokenizer = TextTokenizer.train(TEXTS, vocab_size=200, kind="word", lowercase=False)
    assert tokenizer.tokens("I am angry😡. Really!!") == ["I", "am", "angry", "😡", ".", "Really", "!!"]
    assert tokenizer.tokens("我爱北京天安门") == list("我爱北京天安门")
    assert tokenizer.tokens("日本語のテキスト") == list("日本語のテキスト")
    assert tokenizer.tokens("👍🏽 family 👨‍👩‍👧 ok, don't") == ["👍🏽", "family", "👨‍👩‍👧", "ok", ",", "don't"]
    assert tokenizer.tokens("한국어 텍스트") == ["한국어", "텍스트"]  # Korean is written with spaces: words stay
    unk = tokenizer.encode("北京 is new")  # characters seen in training are known even in a new compound
    assert unk[:2] != [tokenizer.unk_id] * 2 and tokenizer.id_to_token(tokenizer.unk_id) == UNK
    tokenizer.save(tmp_path)
    assert TextTokenizer.load(tmp_path).pretokenizer == "keep-whole"


def test_a_tokenizer_saved_with_the_previous_rule_is_keep_whole_and_splits_as_before(tmp_path):
    old = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1}, unk_token="[UNK]"))
    old.normalizer = normalizers.NFKC()
    old.pre_tokenizer = pre_tokenizers.Split(Regex(KEEP_WHOLE_PATTERN_V1), behavior="removed", invert=True)
    old.save(str(tmp_path / "tokenizer.json"))
    loaded = TextTokenizer.load(tmp_path)
    assert loaded.pretokenizer == "keep-whole"
    assert loaded.tokens("angry😡. 北京") == ["angry", "😡.", "北京"]  # the old rule, as it was trained
