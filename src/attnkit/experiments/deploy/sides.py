"""The decoders of ``attnkit experiment deploy``, each built in its own fresh process
(:mod:`attnkit.experiments.processes`): they decode the test split's sources shortest first, in batches, and return
the outputs in input order (:func:`~attnkit.tasks.seq2seq.ctranslate2.evaluate.decode_in_length_order`)."""

from __future__ import annotations

from collections.abc import Callable


def native(
    *, threads: int, checkpoint: str, sources: list[str], beam: int, batch_size: int, quantize: str | None = None
) -> Callable[[], list[str]]:
    """attnkit's cached decoder on ``checkpoint`` (``quantize="int8"``: ``--quantize int8``), on the CPU."""
    import torch

    from attnkit.tasks.seq2seq.ctranslate2.evaluate import decode_in_length_order
    from attnkit.tasks.seq2seq.inference import load_seq2seq

    torch.set_num_threads(threads)
    loaded = load_seq2seq(checkpoint, device="cpu", quantize=quantize)

    def decode(texts: list[str]) -> list[str]:
        return [t.text for t in loaded.translate(texts, beam_size=beam, batch_size=batch_size)]

    return lambda: decode_in_length_order(decode, sources, loaded.source_tokenizer)[0]


def ctranslate2(
    *, threads: int, directory: str, sources: list[str], beam: int, batch_size: int
) -> Callable[[], list[str]]:
    """A CTranslate2 export of the checkpoint, ``intra_threads = threads``."""
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import decode_in_length_order
    from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2

    translator = load_ctranslate2(directory, threads=threads)

    def decode(texts: list[str]) -> list[str]:
        return [h[0].text for h in translator.translate(texts, beam_size=beam, batch_size=batch_size)]

    return lambda: decode_in_length_order(decode, sources, translator.source_tokenizer)[0]
