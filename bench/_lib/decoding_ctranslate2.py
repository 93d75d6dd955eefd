"""CTranslate2 in ``bench.decoding``: the bench's very weights exported to CTranslate2, float32 and int8.

:func:`build` exports ``bench.decoding``'s model with :func:`attnkit.tasks.seq2seq.ctranslate2.export.export_ctranslate2`
(a symbol vocabulary ``t4 .. t7999`` after attnkit's four specials stands in for a tokeniser) and loads both exports
with ``common.THREADS`` CTranslate2 threads. The model has no encoder layers; CTranslate2 needs one, so the export
holds one identity layer (zero output projections: it adds exactly nothing, and costs one layer over the 8 × 64
source tokens, once per decode). :func:`greedy` decodes the bench's sources for exactly ``steps`` tokens, as attnkit
does with ``<eos>`` disabled: ``min_len = max_len = steps`` keeps ``<eos>`` (id 2) from ever being chosen, which
changes no token unless ``<eos>`` is the argmax somewhere — then the float32 parity check in ``bench.decoding``
fails loudly instead of timing different work. Not a benchmark of its own (no ``NAME``).
"""

from __future__ import annotations

import statistics
from pathlib import Path

import torch

from attnkit.data.seq2seq import Vocab
from attnkit.models.transformer.seq2seq import TransformerSeq2Seq
from bench._lib import common, timing

QUANTIZATIONS = {"ct2_float32": None, "ct2_int8": "int8"}  # timing name -> export quantisation
LABELS = {"ct2_float32": "CTranslate2 float32", "ct2_int8": "CTranslate2 int8"}


def missing_reason() -> str | None:
    """None when ctranslate2 imports, else why its rows are skipped."""
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        return "ctranslate2 is not installed (pip install 'attnkit[deploy]')"
    return None


def version() -> str:
    """The installed CTranslate2's version."""
    import ctranslate2

    return ctranslate2.__version__


def export(model: TransformerSeq2Seq, vocab_size: int, directory: Path) -> dict[str, Path]:
    """Export ``model`` in float32 and int8 under ``directory``; ``{timing name: export directory}``."""
    from attnkit.tasks.seq2seq.ctranslate2.export import export_ctranslate2

    vocab = Vocab([f"t{i}" for i in range(4, vocab_size)], level="symbol")
    return {
        name: export_ctranslate2(model, vocab, vocab, directory / name, quantization=quantization)
        for name, quantization in QUANTIZATIONS.items()
    }


def build(model: TransformerSeq2Seq, vocab_size: int, directory: Path, threads: int = common.THREADS) -> dict:
    """Export ``model`` in float32 and int8 under ``directory``; ``{timing name: loaded translator}``."""
    from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2

    return {name: load_ctranslate2(out, threads=threads) for name, out in export(model, vocab_size, directory).items()}


def greedy(translator, sources: list[list[int]], steps: int) -> torch.Tensor:
    """``steps`` greedy tokens per source ``[B, steps]``, ``<eos>`` never chosen."""
    hypotheses = translator.translate_ids(sources, max_len=steps, min_len=steps, batch_size=len(sources))
    return torch.tensor([h[0].token_ids for h in hypotheses], dtype=torch.long)


def min_and_median(timings: timing.Timings, name: str) -> tuple[float, float]:
    """The fastest and the median sample of ``name`` over the rounds the medians use (clean ones, or all)."""
    rounds = range(len(timings.others_cores)) if timings.contended else timings.clean_rounds
    samples = [timings.samples[name][i] for i in rounds]
    return min(samples), statistics.median(samples)
