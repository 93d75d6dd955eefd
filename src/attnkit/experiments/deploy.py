"""The deployment table: a trained Transformer decoded natively and through CTranslate2 (float32 and int8 exports),
scored by the same scorer, with the decode time of the whole test split.

    attnkit experiment deploy --data cmudict --checkpoint runs/experiments/g2p/transformer --threads 1

:func:`run_deploy` exports the checkpoint twice (float32 and int8 weights) into a temporary directory, decodes the
test split with attnkit's cached decoder and with both exports — shortest sources first, in batches of
``batch_size``, on ``threads`` threads each — for ``rounds`` rounds whose backend order rotates (so slow drift of a
shared machine falls on every backend alike), scores each backend's outputs with
:func:`~attnkit.tasks.seq2seq.ctranslate2.evaluate.score_outputs` (WER/PER, or BLEU/chrF) and writes one section per
dataset of ``docs/results/deploy.json`` (other datasets' sections are kept), then re-renders ``docs/results.md``.
"""

from __future__ import annotations

import platform
import shlex
import statistics
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from attnkit.experiments.common import ExperimentPaths, read_json, write_json

__all__ = ["DECODERS", "run_deploy"]

DECODERS = ("native", "ctranslate2 float32", "ctranslate2 int8")


def _command(data: str, checkpoint: str, beam: int, threads: int, rounds: int) -> str:
    argv = ["attnkit", "experiment", "deploy", "--data", data, "--checkpoint", checkpoint, "--threads", str(threads)]
    argv += [] if beam == 1 else ["--beam", str(beam)]
    argv += [] if rounds == 3 else ["--rounds", str(rounds)]
    return shlex.join(argv)


def run_deploy(
    checkpoint: str | Path,
    data: str,
    paths: ExperimentPaths,
    *,
    beam: int = 1,
    threads: int = 1,
    rounds: int = 3,
    batch_size: int = 64,
) -> dict[str, Any]:
    """Decode ``checkpoint``'s test split natively and with its float32 and int8 CTranslate2 exports; record the
    section ``data`` of ``docs/results/deploy.json`` and return it.

    Raises:
        ValueError: ``data`` is not the task the checkpoint was trained on, bad ``beam``/``threads``/``rounds``,
            or a checkpoint CTranslate2 cannot take (an RNN). ExportError: CTranslate2 is not installed.
    """
    import torch

    from attnkit.tasks.seq2seq.ctranslate2.export import export_ctranslate2, load_ctranslate2
    from attnkit.tasks.seq2seq.data import evaluation_data
    from attnkit.tasks.seq2seq.inference import load_seq2seq
    from attnkit.training.checkpointing import resolve_checkpoint

    for name, value in (("beam", beam), ("threads", threads), ("rounds", rounds), ("batch_size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    resolved = resolve_checkpoint(checkpoint)
    loaded = load_seq2seq(resolved, device="cpu")
    if loaded.config.data != data:
        raise ValueError(f"--data {data}: {resolved} was trained on {loaded.config.data!r}")
    pairs, references, label = evaluation_data(loaded.config, None, split="test")
    sources = [source for source, _ in pairs]
    torch.set_num_threads(threads)

    def native(texts: list[str]) -> list[str]:
        return [t.text for t in loaded.translate(texts, beam_size=beam, batch_size=batch_size)]

    decoders = {"native": native}
    with tempfile.TemporaryDirectory(prefix="attnkit-deploy-") as tmp:
        for weights in ("float32", "int8"):
            exported = export_ctranslate2(
                loaded.model,
                loaded.source_tokenizer,
                loaded.target_tokenizer,
                Path(tmp) / weights,
                quantization=None if weights == "float32" else weights,
                model_config=loaded.config.to_dict(),
                source=str(resolved),
            )
            decoders[f"ctranslate2 {weights}"] = _ctranslate2_decoder(
                load_ctranslate2(exported, threads=threads), beam, batch_size
            )
        outputs, seconds = _timed_rounds(decoders, sources, loaded.source_tokenizer, rounds)
    section = {
        "command": _command(data, str(checkpoint), beam, threads, rounds),
        "checkpoint": str(resolved),
        "data": label,
        "count": len(pairs),
        "metrics": loaded.config.metrics,
        "decoding": "greedy" if beam == 1 else f"beam {beam}",
        "batch_size": batch_size,
        "threads": threads,
        "rounds": rounds,
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {_cpu_count()} logical CPUs",
        "versions": {"torch": torch.__version__, "ctranslate2": _ctranslate2_version()},
        "rows": _rows(outputs, seconds, references, loaded),
    }
    summary_path = paths.results / "deploy.json"
    summary = read_json(summary_path) or {}
    summary[data] = section
    write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return section


def _ctranslate2_decoder(translator: Any, beam: int, batch_size: int):
    def decode(texts: list[str]) -> list[str]:
        return [h[0].text for h in translator.translate(texts, beam_size=beam, batch_size=batch_size)]

    return decode


def _timed_rounds(
    decoders: dict[str, Any], sources: list[str], source_tokenizer: Any, rounds: int
) -> tuple[dict[str, list[str]], dict[str, list[float]]]:
    """Each decoder's outputs (first round) and its seconds per round; round ``r`` starts with decoder ``r``."""
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import decode_in_length_order

    names = list(decoders)
    outputs: dict[str, list[str]] = {}
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            decoded, took = decode_in_length_order(decoders[name], sources, source_tokenizer)
            if name in outputs and decoded != outputs[name]:
                raise RuntimeError(f"{name} decoded the test split differently in round {r + 1}")
            outputs[name] = decoded
            seconds[name].append(round(took, 3))
    return outputs, seconds


def _rows(outputs: dict[str, list[str]], seconds: dict[str, list[float]], references, loaded) -> dict[str, dict]:
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import score_outputs

    native_median = statistics.median(seconds["native"])
    rows = {}
    for name in DECODERS:
        scores = score_outputs(
            outputs[name], references, metrics=loaded.config.metrics, target_tokenizer=loaded.target_tokenizer
        )
        median = statistics.median(seconds[name])
        same = sum(a == b for a, b in zip(outputs[name], outputs["native"], strict=True))
        rows[name] = {
            **{key: round(value, 4) for key, value in scores.items()},
            "seconds": seconds[name],
            "seconds_min": min(seconds[name]),
            "seconds_median": median,
            "throughput_vs_native": round(native_median / median, 3),
            "same_output_as_native": round(100.0 * same / len(outputs[name]), 2),
        }
    return rows


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1


def _ctranslate2_version() -> str:
    import ctranslate2

    return ctranslate2.__version__
