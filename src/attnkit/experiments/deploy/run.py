"""The deployment table: a trained Transformer decoded natively and through CTranslate2 (float32 and int8 exports),
scored by the same scorer, with the decode time of the whole test split.

    attnkit experiment deploy --data cmudict --checkpoint runs/experiments/g2p/transformer --threads 1

:func:`run_deploy` exports the checkpoint twice (float32 and int8 weights), decodes the test split with attnkit's
cached decoder (float32, and ``--quantize int8``) and both exports, **each decoder in its own fresh process**
(:mod:`attnkit.experiments.processes`), scores the outputs with
:func:`~attnkit.tasks.seq2seq.ctranslate2.evaluate.score_outputs` and writes one section per dataset of
``docs/results/deploy.json`` (other datasets' sections are kept).
"""

from __future__ import annotations

import os
import platform
import shlex
import statistics
import tempfile
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnkit.experiments.common import ExperimentPaths, read_json, write_json

if TYPE_CHECKING:
    from attnkit.experiments.processes import Side

__all__ = ["DECODERS", "run_deploy"]

DECODERS = ("native", "native int8", "ctranslate2 float32", "ctranslate2 int8")


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
    section ``data`` of ``docs/results/deploy.json`` and return it. ``data`` must be the checkpoint's task; an RNN
    (which CTranslate2 cannot take) is refused."""
    import torch

    from attnkit.checkpointing import resolve_checkpoint
    from attnkit.experiments.processes import Side, compare_processes
    from attnkit.tasks.seq2seq.data import evaluation_data
    from attnkit.tasks.seq2seq.inference import load_seq2seq

    for name, value in (("beam", beam), ("threads", threads), ("rounds", rounds), ("batch_size", batch_size)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    resolved = resolve_checkpoint(checkpoint)
    loaded = load_seq2seq(resolved, device="cpu")
    if loaded.config.data != data:
        raise ValueError(f"--data {data}: {resolved} was trained on {loaded.config.data!r}")
    pairs, references, label = evaluation_data(loaded.config, None, split="test")
    sources = [source for source, _ in pairs]
    native = {"checkpoint": str(resolved), "sources": sources, "beam": beam, "batch_size": batch_size}
    sides = {
        "native": Side("attnkit.experiments.deploy.sides:native", native, warmup=0),
        "native int8": Side("attnkit.experiments.deploy.sides:native", {**native, "quantize": "int8"}, warmup=0),
    }
    with tempfile.TemporaryDirectory(prefix="attnkit-deploy-") as tmp:
        sides.update(_ctranslate2_sides(loaded, resolved, Path(tmp), sources, beam=beam, batch_size=batch_size))
        timings = compare_processes(sides, rounds=rounds, threads=threads)
    import ctranslate2  # present: the exports above needed it

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
        "timing": timings.summary(f"{threads} thread(s)"),
        "load_average_before_round": [round(x, 2) for x in timings.load_before_round],
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count() or 1} logical CPUs",
        "versions": {"torch": torch.__version__, "ctranslate2": ctranslate2.__version__},
        "rows": _rows(timings.results, timings.samples, references, loaded),
    }
    _record(paths, data, section)
    return section


def _ctranslate2_sides(
    loaded, resolved: Path, directory: Path, sources: list[str], *, beam: int, batch_size: int
) -> dict[str, Side]:
    """The checkpoint exported to CTranslate2 twice under ``directory`` (float32 and int8 weights), and the
    process :class:`~attnkit.experiments.processes.Side` that decodes each export."""
    from attnkit.experiments.processes import Side
    from attnkit.tasks.seq2seq.ctranslate2.export import export_ctranslate2

    sides = {}
    for weights in ("float32", "int8"):
        exported = export_ctranslate2(
            loaded.model,
            loaded.source_tokenizer,
            loaded.target_tokenizer,
            directory / weights,
            quantization=None if weights == "float32" else weights,
            model_config=loaded.config.to_dict(),
            source=str(resolved),
        )
        recipe = {"directory": str(exported), "sources": sources, "beam": beam, "batch_size": batch_size}
        sides[f"ctranslate2 {weights}"] = Side("attnkit.experiments.deploy.sides:ctranslate2", recipe, warmup=0)
    return sides


def _record(paths: ExperimentPaths, data: str, section: dict[str, Any]) -> None:
    """Write ``section`` as dataset ``data``'s part of ``docs/results/deploy.json`` (keeping the other datasets')
    and re-render ``docs/results.md``."""
    from attnkit.experiments.report import render_results

    summary_path = paths.results / "deploy.json"
    summary = read_json(summary_path) or {}
    summary[data] = section
    write_json(summary_path, summary)
    render_results(paths)


def _rows(outputs: dict[str, list[str]], seconds: dict[str, list[float]], references, loaded) -> dict[str, dict]:
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import score_outputs
    from attnkit.tasks.seq2seq.scoring import scoring_named

    scoring = scoring_named(loaded.config.metrics)
    native_min = min(seconds["native"])
    rows = {}
    for name in DECODERS:
        scores = score_outputs(outputs[name], references, scoring=scoring, target_tokenizer=loaded.target_tokenizer)
        median = statistics.median(seconds[name])
        same = sum(a == b for a, b in zip(outputs[name], outputs["native"], strict=True))
        rows[name] = {
            **{key: round(value, 4) for key, value in scores.items()},
            "seconds": [round(x, 3) for x in seconds[name]],
            "seconds_min": min(seconds[name]),
            "seconds_median": median,
            "throughput_vs_native": round(native_min / min(seconds[name]), 3),  # fastest rounds
            "same_output_as_native": round(100.0 * same / len(outputs[name]), 2),
        }
    return rows
