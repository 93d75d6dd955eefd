"""A subword (BPE) tokeniser for translation, trained with Hugging Face ``tokenizers`` (layer 5).

It shares the special ids of :mod:`attnkit.data.seq2seq.vocab` (``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2,
``<unk>`` 3) and the same ``encode``/``decode`` contract, so models and batching treat both alike. Texts are
NFC-normalised (accents stay), case is kept, spaces become ``▁`` (SentencePiece style) and punctuation is split
off, so ``decode(encode(text))`` gives back ``text`` with its whitespace normalised. The file it writes is a
plain Hugging Face ``tokenizer.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.data.seq2seq.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, UNK, UNK_ID, content_ids, write_atomically

if TYPE_CHECKING:
    import tokenizers

__all__ = ["SubwordTokenizer"]


class SubwordTokenizer:
    """BPE subwords with attnkit's special ids. Build with :meth:`train` or :meth:`load`."""

    level = "subword"
    pad_id, bos_id, eos_id, unk_id = PAD_ID, BOS_ID, EOS_ID, UNK_ID

    def __init__(self, tokenizer: tokenizers.Tokenizer) -> None:
        for expected, token in enumerate(SPECIALS):
            if tokenizer.token_to_id(token) != expected:
                raise ValueError(f"tokenizer must map {token} to id {expected}, got {tokenizer.token_to_id(token)}")
        self._tokenizer = tokenizer

    @classmethod
    def train(cls, texts: Iterable[str], *, vocab_size: int = 8000, min_frequency: int = 2) -> SubwordTokenizer:
        """Learn BPE merges from ``texts`` (the training split; for a shared vocabulary, both sides);
        ``vocab_size`` counts the four specials."""
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

        if vocab_size <= len(SPECIALS):
            raise ValueError(f"vocab_size must exceed {len(SPECIALS)} (the specials), got {vocab_size}")
        tokenizer = Tokenizer(models.BPE(unk_token=UNK))
        tokenizer.normalizer = normalizers.NFC()
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()])
        tokenizer.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(SPECIALS), show_progress=False
        )
        tokenizer.train_from_iterator(texts, trainer=trainer)  # any iterable: a stream is read once
        return cls(tokenizer)

    @property
    def vocab_size(self) -> int:
        """The number of ids, specials included: embedding tables need this many rows."""
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"SubwordTokenizer(size={self.vocab_size})"

    def id_to_token(self, token_id: int) -> str:
        """The subword of ``token_id``; raises ``IndexError`` outside ``[0, vocab_size)``."""
        token = self._tokenizer.id_to_token(int(token_id))
        if token is None:
            raise IndexError(f"token id {token_id} outside [0, {self.vocab_size})")
        return token

    def token_to_id(self, token: str) -> int:
        """The id of ``token``, or ``<unk>``'s id when unknown."""
        found = self._tokenizer.token_to_id(token)
        return UNK_ID if found is None else found

    def tokens(self, text: str) -> list[str]:
        """The subword strings of ``text``, aligned with :meth:`encode` (for attention plots)."""
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str) -> list[int]:
        """Ids of the subwords of ``text``; no ``<bos>``/``<eos>`` added."""
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """:meth:`encode` applied to each text (in parallel inside ``tokenizers``)."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``: ``<pad>`` and ``<bos>`` are skipped and decoding stops at the first ``<eos>``."""
        return self._tokenizer.decode(content_ids(ids), skip_special_tokens=False)

    def to_dict(self) -> dict:
        """The Hugging Face ``tokenizer.json`` content."""
        return json.loads(self._tokenizer.to_str())

    @classmethod
    def from_dict(cls, data: dict) -> SubwordTokenizer:
        """Inverse of :meth:`to_dict`."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(json.dumps(data)))

    def save(self, path: str | Path) -> Path:
        """Write ``tokenizer.json`` content to ``path`` atomically and return the path."""
        return write_atomically(path, lambda temporary: self._tokenizer.save(str(temporary)))

    @classmethod
    def load(cls, path: str | Path) -> SubwordTokenizer:
        """Read a file written by :meth:`save` (any ``tokenizer.json`` with the same specials)."""
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(path)))
