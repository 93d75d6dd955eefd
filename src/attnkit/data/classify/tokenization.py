"""Tokenisers trained on the training texts, saved as ``tokenizer.json`` (layer 5).

A thin wrapper over Hugging Face ``tokenizers``: word-level, WordPiece or BPE models trained from scratch on
the training split (never on test), with NFKC normalisation, optional lowercasing, and a pre-tokeniser that cuts
the text into words before the model sees it. ``[PAD]`` always has id 0 and ``[UNK]`` id 1; no other special tokens
are added and ``encode`` adds none (classifiers pool over the tokens themselves).

Pre-tokenisers (``train(pretokenizer=...)``; the choice is stored in ``tokenizer.json``, so a saved tokeniser keeps
behaving as it was trained):

- ``"keep-whole"`` (the default): one ``tokenizers`` ``Split`` rule, :data:`KEEP_WHOLE_PATTERN`, that keeps whole
  URLs (``https://…``, ``www.…``), e-mail addresses, ``@handles``, ``#hashtags``, numbers with separators (``3.5``,
  ``1,000``, ``10:30``; ``2nd`` and ``1990s`` are plain words), dotted abbreviations (``U.S.``, ``e.g.``) and words
  with inner apostrophes (``don't``, ``I'm``, ``we'll``, ``dog's``); each emoji is a token of its own (skin tones
  and ZWJ sequences kept together), never glued to punctuation (``angry😡.`` is ``angry 😡 .``); Chinese and
  Japanese, written without spaces, give one token per character (``北京`` is ``北 京``); everything else splits as
  ``"whitespace"`` does. (Tokenisers saved before the emoji and CJK rules keep the rule they were trained with.) A
  subword model may still cut a kept word into pieces, but no piece crosses its edges.
- ``"whitespace"``: ``tokenizers``' ``Whitespace`` (``\\w+|[^\\w\\s]+``), the rule before the above: ``don't`` is
  ``don ' t`` and a URL six or more tokens. Tokenisers saved before the choice existed use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.data.reading import DataError

if TYPE_CHECKING:
    import tokenizers

__all__ = ["KEEP_WHOLE_PATTERN", "KINDS", "PAD", "PRETOKENIZERS", "UNK", "TextTokenizer"]

PAD = "[PAD]"
UNK = "[UNK]"
KINDS = ("word", "wordpiece", "bpe")
_MODEL_TYPES = {"WordLevel": "word", "WordPiece": "wordpiece", "BPE": "bpe"}
PRETOKENIZERS = ("keep-whole", "whitespace")

# The pieces kept whole, tried in this order at each position (the leftmost match wins; Oniguruma syntax, where \w is
# Unicode-aware as in the Whitespace rule). The regex matches the pieces; the text between them (whitespace) is
# dropped. Possessive quantifiers (*+, ++) never backtrack (its cost against Whitespace: docs/benchmarks.md).
_URL = r"(?i:https?://|ftp://|www\.)[^\s<>\"]*[^\s<>\"'.,;:!?)\]}]"  # URL, not ending in punctuation
_NUMBER = r"\d++(?:[.,:]\d++)+\w*+"  # 3.5, 1,000, 1,000.50, 10:30, 3.5mm
_ABBREVIATION = r"(?:[^\W\d_]\.){2,}"  # U.S., e.g.
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}"  # scripts written without spaces: one token per character
_EMOJI = r"\p{Extended_Pictographic}"
_LETTER = rf"[^\W{_CJK}]"  # a word character that is not CJK
KEEP_WHOLE_PATTERN = "|".join(
    [
        _URL,
        r"[@#]\w++",  # @handle, #hashtag
        _NUMBER,
        _ABBREVIATION,
        rf"[{_CJK}]",  # 北京 -> 北 京 (a CJK run without spaces is not one unknown word)
        rf"{_EMOJI}[\x{{FE0F}}\x{{200D}}\x{{1F3FB}}-\x{{1F3FF}}{_EMOJI}]*+",  # one emoji (skin tone, ZWJ family)
        # e-mail; word, don't, I'm
        rf"{_LETTER}++(?:[\w.+\-]*+@[\w\-]+(?:\.[\w\-]+)*\.[\w\-]*[^\W_]|(?:['’]{_LETTER}++)*+)",
        rf"[^\w\s{_EMOJI}]++",  # runs of other symbols (punctuation), never glued to an emoji
    ]
)
# The rule tokenisers saved before emoji and CJK were split (still read as "keep-whole", and still applied as saved).
KEEP_WHOLE_PATTERN_V1 = "|".join(
    [
        _URL,
        r"[@#]\w++",
        _NUMBER,
        _ABBREVIATION,
        r"\w++(?:[\w.+\-]*+@[\w\-]+(?:\.[\w\-]+)*\.[\w\-]*[^\W_]|(?:['’]\w++)*+)",
        r"[^\w\s]++",
    ]
)


class TextTokenizer:
    """Maps texts to lists of token ids; ``[PAD]`` is id 0, ``[UNK]`` id 1.

    Build one with :meth:`train` or :meth:`load`; wrap an existing ``tokenizers.Tokenizer`` directly only if
    it follows the same special-token layout (checked).
    """

    FILENAME = "tokenizer.json"

    def __init__(self, tokenizer: tokenizers.Tokenizer) -> None:
        if tokenizer.token_to_id(PAD) != 0:
            raise ValueError(f"tokenizer must map {PAD} to id 0, got {tokenizer.token_to_id(PAD)}")
        if tokenizer.token_to_id(UNK) is None:
            raise ValueError(f"tokenizer has no {UNK} token")
        spec = json.loads(tokenizer.to_str())
        model_type = spec["model"]["type"]
        if model_type not in _MODEL_TYPES:
            raise ValueError(f"unsupported tokenizer model {model_type!r}; expected one of {list(_MODEL_TYPES)}")
        self._tokenizer = tokenizer
        self.kind: str = _MODEL_TYPES[model_type]
        self.pretokenizer: str = _pretokenizer_name(spec.get("pre_tokenizer"))
        """``"keep-whole"`` or ``"whitespace"`` (see the module docstring); ``"custom"`` for any other rule."""

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        *,
        kind: str = "word",
        vocab_size: int = 30_000,
        min_frequency: int = 2,
        lowercase: bool = True,
        pretokenizer: str = "keep-whole",
    ) -> TextTokenizer:
        """Train a tokeniser of ``kind`` (``"word"``: rare words become ``[UNK]``; ``"wordpiece"``, ``"bpe"``) on
        ``texts`` (the training split); ``vocab_size`` counts the special tokens.

        Word-level and BPE training give the same ``tokenizer.json`` on every run. WordPiece training in
        ``tokenizers`` is not repeatable (huggingface/tokenizers#1794: ``##`` pieces get ids in hash-map
        order, which breaks ties between merges), so a WordPiece run is reproduced from its saved
        ``tokenizer.json``.
        """
        from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if pretokenizer not in PRETOKENIZERS:
            raise ValueError(f"pretokenizer must be one of {PRETOKENIZERS}, got {pretokenizer!r}")
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2 (for {PAD} and {UNK}), got {vocab_size}")
        specials = [PAD, UNK]
        common = {"vocab_size": vocab_size, "min_frequency": min_frequency, "special_tokens": specials}
        if kind == "word":
            model, trainer = models.WordLevel(unk_token=UNK), trainers.WordLevelTrainer(**common)
        elif kind == "wordpiece":
            model = models.WordPiece(unk_token=UNK)
            trainer = trainers.WordPieceTrainer(**common, show_progress=False)
        else:
            model = models.BPE(unk_token=UNK)
            trainer = trainers.BpeTrainer(**common, show_progress=False)
        tokenizer = Tokenizer(model)
        steps = [normalizers.NFKC(), normalizers.Lowercase()] if lowercase else [normalizers.NFKC()]
        tokenizer.normalizer = normalizers.Sequence(steps)
        if pretokenizer == "keep-whole":
            tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(KEEP_WHOLE_PATTERN), behavior="removed", invert=True)
        else:
            tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
        tokenizer.train_from_iterator(texts, trainer=trainer)  # any iterable: a stream is read once
        return cls(tokenizer)

    @classmethod
    def load(cls, directory: str | Path) -> TextTokenizer:
        """Load ``directory/tokenizer.json``; DataError when it is missing or not a tokenizer this class can use."""
        from tokenizers import Tokenizer

        path = Path(directory) / cls.FILENAME
        if not path.is_file():
            raise DataError(f"{path}: no such file")
        try:
            return cls(Tokenizer.from_file(str(path)))
        except Exception as error:  # tokenizers raises its own Exception type for malformed JSON
            raise DataError(f"{path}: not a usable tokenizer ({error})") from None

    def save(self, directory: str | Path) -> Path:
        """Write ``directory/tokenizer.json`` atomically (temporary name, then rename) and return its path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / self.FILENAME
        temporary = directory / f".{self.FILENAME}.{os.getpid()}.tmp"
        self._tokenizer.save(str(temporary))
        os.replace(temporary, path)
        return path

    def to_str(self) -> str:
        """The ``tokenizer.json`` text: equal strings mean equal tokenisers (a loaded one gives its file's)."""
        return self._tokenizer.to_str()

    @property
    def pad_id(self) -> int:
        """The id of ``[PAD]``: always 0."""
        return 0

    @property
    def unk_id(self) -> int:
        """The id of ``[UNK]``."""
        return self._tokenizer.token_to_id(UNK)

    @property
    def vocab_size(self) -> int:
        """The number of ids, special tokens included: embedding tables need this many rows."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def encode(self, text: str, *, max_length: int | None = None) -> list[int]:
        """Token ids of one text, truncated to its first ``max_length`` tokens when given."""
        return self.encode_batch([text], max_length=max_length)[0]

    def encode_batch(self, texts: Sequence[str], *, max_length: int | None = None) -> list[list[int]]:
        """Token ids of each text (no special tokens added), truncated to ``max_length`` tokens when given."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [encoding.ids[:max_length] for encoding in encodings]

    def tokens(self, text: str) -> list[str]:
        """The pieces of ``text`` behind each id of :meth:`encode`, as written (original case; a word mapped to
        ``[UNK]`` still shows as itself), for showing what was attended to."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        return [text[start:end] for start, end in encoding.offsets]

    def id_to_token(self, token_id: int) -> str:
        """The string of ``token_id``; raises ``IndexError`` outside ``[0, vocab_size)``."""
        token = self._tokenizer.id_to_token(token_id)
        if token is None:
            raise IndexError(f"token id {token_id} outside [0, {self.vocab_size})")
        return token


def _pretokenizer_name(spec: dict | None) -> str:
    """Name the pre-tokeniser of a ``tokenizer.json`` (its ``"pre_tokenizer"`` entry) as :data:`PRETOKENIZERS` does."""
    if spec == {"type": "Whitespace"}:
        return "whitespace"
    if (
        spec is not None
        and spec.get("type") == "Split"
        and spec.get("pattern") in ({"Regex": KEEP_WHOLE_PATTERN}, {"Regex": KEEP_WHOLE_PATTERN_V1})
        and spec.get("behavior") == "Removed"
        and spec.get("invert") is True
    ):
        return "keep-whole"
    return "custom"
