"""Decoding with an exported model in CTranslate2, tokenised by attnkit on both ends (layer 5).

:class:`CTranslate2Translator` is what :func:`attnkit.tasks.seq2seq.ctranslate2.export.load_ctranslate2` returns. It follows
attnkit's decoding conventions so both backends can be compared token for token: sources carry no specials, the
decoder starts from ``<bos>``, ``<eos>`` may come first, ``max_len`` counts ``<eos>`` and defaults to ``2·S + 10``
per batch of ``batch_size`` sources, and a hypothesis scores ``log P / length ** length_penalty`` with ``<eos>``
counted in the length (as :func:`attnkit.decoding.beam_search`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attnkit.data.seq2seq import Tokenizer
from attnkit.data.seq2seq.vocab import EOS_ID

__all__ = ["CTranslate2Translator", "Hypothesis"]


@dataclass(frozen=True)
class Hypothesis:
    """One decoded hypothesis: its ``text`` (``target_tokenizer.decode``), normalised ``score``, the generated
    ``token_ids`` (``<eos>`` included when ``finished``; False: cut at ``max_len``)."""

    text: str
    score: float
    token_ids: list[int]
    finished: bool


class CTranslate2Translator:
    """An exported model loaded in CTranslate2 (``translator``: the ``ctranslate2.Translator``), with attnkit's
    tokenisers on both ends (made by :func:`attnkit.tasks.seq2seq.ctranslate2.export.load_ctranslate2`)."""

    def __init__(
        self, translator: Any, source_tokenizer: Tokenizer, target_tokenizer: Tokenizer, manifest: dict[str, Any]
    ) -> None:
        self.translator, self.manifest = translator, manifest
        self.source_tokenizer, self.target_tokenizer = source_tokenizer, target_tokenizer
        self._source_tokens = [source_tokenizer.id_to_token(i) for i in range(source_tokenizer.vocab_size)]
        target_tokens = [target_tokenizer.id_to_token(i) for i in range(target_tokenizer.vocab_size)]
        self._target_ids = {token: i for i, token in enumerate(target_tokens)}
        self.max_positions: int | None = manifest["model"].get("max_positions")

    def translate(
        self,
        texts: Sequence[str],
        *,
        beam_size: int = 1,
        num_hypotheses: int = 1,
        max_len: int | None = None,
        length_penalty: float = 1.0,
        batch_size: int = 64,
    ) -> list[list[Hypothesis]]:
        """Decode ``texts`` in input order: for each, its ``num_hypotheses`` best hypotheses, best first (see
        :meth:`translate_ids`)."""
        options = {"beam_size": beam_size, "num_hypotheses": num_hypotheses, "max_len": max_len}
        ids = self.source_tokenizer.encode_batch(list(texts))
        return self.translate_ids(ids, length_penalty=length_penalty, batch_size=batch_size, **options)

    def translate_ids(
        self,
        sources: Sequence[Sequence[int]],
        *,
        beam_size: int = 1,
        num_hypotheses: int = 1,
        max_len: int | None = None,
        length_penalty: float = 1.0,
        batch_size: int = 64,
        min_len: int = 0,
    ) -> list[list[Hypothesis]]:
        """Decode source id lists (no specials) in input order, ``batch_size`` at a time.

        ``max_len`` counts ``<eos>`` (default ``2·S + 10`` per batch, at most the export's ``max_positions``);
        ``<eos>`` is not allowed before ``min_len`` tokens (0, attnkit's rule: it may come first). An empty source gets ``num_hypotheses`` empty, unfinished hypotheses scored 0 (CTranslate2 does not decode
        it; attnkit's own decoders decode from an empty memory). Where hypotheses are cut at ``max_len``, the n-best
        beyond the first may differ from :func:`attnkit.decoding.beam_search`'s (CTranslate2 ranks the live
        hypotheses of the last step with the finished ones).
        """
        if beam_size < 1 or not 1 <= num_hypotheses <= beam_size:
            raise ValueError(
                f"need beam_size >= 1 and 1 <= num_hypotheses <= beam_size, got {beam_size}, {num_hypotheses}"
            )
        if length_penalty < 0 or batch_size < 1 or min_len < 0:
            raise ValueError(
                f"length_penalty, min_len must be >= 0 and batch_size >= 1, got {length_penalty}, {min_len}, {batch_size}"
            )
        limit = self.max_positions
        if max_len is not None and (max_len < 1 or (limit is not None and max_len > limit)):
            bound = f"[1, {limit}] (this export's position table)" if limit is not None else ">= 1"
            raise ValueError(f"max_len must lie in {bound}, got {max_len}")
        sources = [list(ids) for ids in sources]
        self._check_sources(sources)
        results: list[list[Hypothesis]] = []
        for start in range(0, len(sources), batch_size):
            chunk = sources[start : start + batch_size]
            longest = max(len(ids) for ids in chunk)
            steps = max_len or min(2 * longest + 10, limit or 2 * longest + 10)
            outputs = self.translator.translate_batch(
                [[self._source_tokens[i] for i in ids] for ids in chunk],
                beam_size=beam_size,
                num_hypotheses=num_hypotheses,
                length_penalty=length_penalty,
                max_decoding_length=steps,
                min_decoding_length=min(min_len, steps),
                max_input_length=0,
                return_scores=True,
                return_end_token=True,
            )
            results.extend(self._hypotheses(output) for output in outputs)
        return results

    def _check_sources(self, sources: list[list[int]]) -> None:
        """Ids inside the source vocabulary, lengths inside the position table: else ``ValueError`` naming the row."""
        vocab, limit = len(self._source_tokens), self.max_positions
        for row, ids in enumerate(sources):
            if any(not 0 <= i < vocab for i in ids):
                raise ValueError(f"source {row} has ids outside [0, {vocab}): {ids}")
            if limit is not None and len(ids) > limit:
                raise ValueError(f"source {row} has {len(ids)} tokens; this export's position table holds {limit}")

    def _hypotheses(self, output: Any) -> list[Hypothesis]:
        hypotheses = []
        for tokens, score in zip(output.hypotheses, output.scores, strict=True):
            ids = [self._target_ids[token] for token in tokens]
            finished = bool(ids) and ids[-1] == EOS_ID
            hypotheses.append(Hypothesis(self.target_tokenizer.decode(ids), float(score), ids, finished))
        return hypotheses
