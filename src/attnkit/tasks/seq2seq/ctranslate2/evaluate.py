"""Evaluate a CTranslate2 export as ``attnkit evaluate`` evaluates a checkpoint, with the very same scorer (layer 5).

    translator = load_ctranslate2("exports/g2p")
    config = export_config(translator.manifest, "exports/g2p")   # the checkpoint's task, data and metrics
    pairs, references, _ = evaluation_data(config)               # the test split it was trained for
    evaluate_ctranslate2(translator, pairs, references, scoring=scoring_named(config.metrics), beam_size=5)
    # {"wer": ..., "per": ..., "exact_match": ..., "count": 12000.0, "decode_seconds": ...}

Both backends decode the sources shortest first, ``batch_size`` at a time, and score the hypotheses with
:meth:`attnkit.tasks.seq2seq.objective.Seq2SeqObjective.score`. An export has no teacher-forced pass, so there is no
``loss`` or ``token_accuracy``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attnkit.data.seq2seq import Tokenizer
from attnkit.data.seq2seq.dataset import Pair
from attnkit.tasks.seq2seq.config import Seq2SeqConfig
from attnkit.tasks.seq2seq.ctranslate2.manifest import MANIFEST_FILE, ExportError
from attnkit.tasks.seq2seq.ctranslate2.translator import CTranslate2Translator
from attnkit.tasks.seq2seq.scoring import Scoring, checked_references

__all__ = [
    "check_ctranslate2_options",
    "ctranslate2_device",
    "decode_in_length_order",
    "evaluate_ctranslate2",
    "export_config",
    "score_outputs",
]


def export_config(manifest: dict[str, Any], directory: str | Path) -> Seq2SeqConfig:
    """The config of the checkpoint an export came from (its task, data, metrics and levels), from its manifest."""
    values = manifest.get("model_config")
    if not isinstance(values, dict):
        raise ExportError(
            f"{Path(directory) / MANIFEST_FILE}: records no checkpoint config, so its task and metrics are unknown "
            "(export it with `attnkit export`)"
        )
    try:
        return Seq2SeqConfig.from_dict(values)
    except (TypeError, ValueError) as error:
        raise ExportError(f"{Path(directory) / MANIFEST_FILE}: model_config: {error}") from None


def ctranslate2_device(device: str) -> tuple[str, int]:
    """attnkit's ``--device`` as CTranslate2's ``(device, device_index)``: ``auto``, ``cpu``, ``cuda``, ``cuda:N``."""
    if device in ("auto", "cpu", "cuda"):
        return device, 0
    if device.startswith("cuda:") and device[5:].isdigit():
        return "cuda", int(device[5:])
    raise ValueError(f"--device {device}: the ctranslate2 backend runs on auto, cpu, cuda or cuda:N")


def check_ctranslate2_options(args: Any) -> tuple[str, int]:
    """Refuse command-line options the ctranslate2 backend cannot honour (several checkpoints, a ``--precision``,
    ``--device mps``) and return CTranslate2's ``(device, device_index)``."""
    if len(args.checkpoint) != 1:
        raise ValueError("--backend ctranslate2 decodes one exported model (no ensembles)")
    if args.precision != "fp32":
        raise ValueError(
            f"--precision {args.precision} is for the native backend; an export computes in the type it was "
            "exported with (attnkit export --quantize)"
        )
    return ctranslate2_device(args.device)


def decode_in_length_order(
    decode: Callable[[list[str]], list[str]], texts: Sequence[str], source_tokenizer: Tokenizer
) -> tuple[list[str], float]:
    """Decode ``texts`` shortest source first (so ``decode``'s batches hold sources of like length, as
    ``attnkit evaluate``'s do) and return the outputs in input order with the wall-clock seconds ``decode`` took."""
    lengths = [len(ids) for ids in source_tokenizer.encode_batch(list(texts))]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    start = time.perf_counter()
    decoded = decode([texts[i] for i in order])
    seconds = time.perf_counter() - start
    if len(decoded) != len(texts):
        raise ValueError(f"decode returned {len(decoded)} outputs for {len(texts)} texts")
    outputs = [""] * len(texts)
    for position, index in enumerate(order):
        outputs[index] = decoded[position]
    return outputs, seconds


def score_outputs(
    hypotheses: Sequence[str], references: Sequence[Sequence[str]], *, scoring: Scoring, target_tokenizer: Tokenizer
) -> dict[str, float]:
    """``wer``/``per``/``exact_match`` (``scoring=SEQUENCE``) or ``bleu``/``chrf`` (``TEXT``) of decoded
    ``hypotheses`` against each one's acceptable ``references``, plus ``count``: the native evaluation's scorer."""
    from attnkit.tasks.seq2seq.objective import Seq2SeqObjective

    scorer = Seq2SeqObjective(None, target_tokenizer, scoring=scoring)  # scoring never touches the model
    return {**scorer.score(hypotheses, references), "count": float(len(hypotheses))}


def evaluate_ctranslate2(
    translator: CTranslate2Translator,
    pairs: Sequence[Pair],
    references: Sequence[Sequence[str]] | None = None,
    *,
    scoring: Scoring,
    beam_size: int = 1,
    batch_size: int = 64,
    length_penalty: float = 1.0,
    max_len: int | None = None,
) -> dict[str, float]:
    """Decode every source of ``pairs`` with an export and score the best hypotheses as
    :func:`~attnkit.tasks.seq2seq.inference.evaluate_seq2seq` does, plus ``decode_seconds`` (wall time)."""
    references = checked_references(pairs, references)

    def decode(texts: list[str]) -> list[str]:
        found = translator.translate(
            texts, beam_size=beam_size, batch_size=batch_size, length_penalty=length_penalty, max_len=max_len
        )
        return [hypotheses[0].text for hypotheses in found]

    sources = [source for source, _ in pairs]
    hypotheses, seconds = decode_in_length_order(decode, sources, translator.source_tokenizer)
    scores = score_outputs(hypotheses, references, scoring=scoring, target_tokenizer=translator.target_tokenizer)
    return {**scores, "decode_seconds": seconds}
