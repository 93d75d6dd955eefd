"""Benchmark: attnkit's cached greedy decoding against CTranslate2, each runtime in its own fresh process.

The same model, weights, sources and 256 greedy steps as ``bench.decoding`` (d 256, 4 decoder layers, vocabulary
8,000, a batch of 8 sources of 64 tokens, ``<eos>`` disabled), exported to CTranslate2 in float32 and int8 by the
parent and decoded by each side in a process of its own (:mod:`bench._lib.processes`): one process per side per
round, the order rotating, threads pinned (environment, ``torch.set_num_threads``, CTranslate2's
``intra_threads``). Two settings: **2 threads** on both cores, and **1 thread** pinned to core 0
(``taskset -c 0``). A side's figure is its fastest round (each process: one warm-up decode, then the fastest of
``inner`` timed decodes); the median and slowest round are kept as its spread, and the 1-minute load average
before each round beside it. CTranslate2 float32 must return attnkit's very tokens; native int8
(``--quantize int8``'s :func:`attnkit.models.quantize.quantize_model`) and CTranslate2 int8 are reported with the
share of tokens agreeing with float32 (random weights: judge int8's accuracy on a trained model, as
``attnkit experiment deploy`` does). Target: attnkit float32 at ≥ 0.6× CTranslate2 float32's tokens/s with 2
threads and ≥ 0.8× with 1 thread; native int8 at ≥ 1.5× native float32. A fourth side, ``attnkit_split``, decodes
the batch in two halves, each in its own Python thread with one torch thread
(:func:`attnkit.decoding_threads.decode_in_threads`), and must return attnkit's very tokens: at 2 threads it is the
alternative to torch's intra-op threads, at 1 thread (both halves on one core) its overhead.
Run: ``python -m bench.decoding_runtimes [--quick] [--repeats N] [--threads 1|2]`` (``--threads``: that setting
alone, e.g. ``--threads 1`` under ``taskset -c 0`` while the other core is busy; ``--workdir DIR`` keeps the export for the next run;
``--inner N`` timed decodes per process, default 2, fewer to fit a short window).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch

from bench import decoding
from bench._lib import common
from bench._lib import decoding_ctranslate2 as ct2
from bench._lib.processes import ProcessTimings, Side, compare_processes

NAME = "decoding_runtimes"
TARGETS = {2: 0.6, 1: 0.8}  # threads -> attnkit's share of CTranslate2 float32's tokens/s
INT8_TARGET = 1.5  # native int8 tokens/s over native float32's
SETTINGS = ((2, None), (1, "0"))  # (threads, taskset cpus)
SIDES = "bench._lib.decoding_sides"
SPLIT = 2  # the split side: the batch in two halves, each in a Python thread with one torch thread
LABELS = {
    "attnkit": "attnkit float32 (cached greedy)",
    "attnkit_int8": "attnkit int8 (dynamic quantisation)",
    "attnkit_split": f"attnkit float32, batch split over {SPLIT} Python threads x 1 torch thread",
    **ct2.LABELS,
}


def _sides(config: decoding.Config, directory: Path, sources: list[list[int]], inner: int) -> dict[str, Side]:
    """Every side's recipe: attnkit float32 and int8 on the saved weights, CTranslate2's two exports (weights and
    exports already in ``directory`` are used as they are)."""
    from safetensors.torch import save_file

    model = decoding.build_model(config)
    weights = directory / "model.safetensors"
    if not weights.exists():
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights))
    native = {"config": config.__dict__, "weights": str(weights), "sources": sources}
    sides = {
        "attnkit": Side(f"{SIDES}:native", native, inner=inner),
        "attnkit_int8": Side(f"{SIDES}:native", {**native, "quantize": "int8"}, inner=inner),
        "attnkit_split": Side(f"{SIDES}:native", {**native, "split": SPLIT}, inner=inner),
    }
    if ct2.missing_reason() is None:
        exports = {name: directory / name for name in ct2.QUANTIZATIONS}
        if not all((out / "model.bin").exists() for out in exports.values()):
            exports = ct2.export(model, config.vocab, directory)
        for name, out in exports.items():
            recipe = {"directory": str(out), "sources": sources, "steps": config.steps}
            sides[name] = Side(f"{SIDES}:ctranslate2", recipe, inner=inner)
    return sides


def _agreement(timings: ProcessTimings, name: str) -> float:
    ours, theirs = torch.tensor(timings.results["attnkit"]), torch.tensor(timings.results[name])
    return float((ours == theirs).float().mean()) if ours.shape == theirs.shape else 0.0


def _setting_rows(timings: ProcessTimings, config: decoding.Config, size: str) -> tuple[list[common.Row], dict]:
    threads = timings.threads
    where = f"{threads} thread(s)" + (f", taskset -c {timings.cpus}" if timings.cpus else "")
    tokens = config.batch * config.steps
    ours = timings.min("attnkit")
    rows = [
        common.Row(
            "greedy decode, int8",
            f"{size}, {where}",
            timings.min("attnkit_int8"),
            ours,
            LABELS["attnkit"],
            "s",
            1.0 / INT8_TARGET,
        )
    ]
    figures: dict[str, object] = {
        name: {
            "tokens_per_s": tokens / timings.min(name),
            "spread_s": timings.spread(name),
            "cpu_s": timings.cpu_min(name),  # least process CPU time: steadier than wall time under load
        }
        for name in timings.samples
    }
    figures["attnkit_int8"]["tokens_agreeing_with_float32"] = _agreement(timings, "attnkit_int8")
    for name in ("ct2_float32", "ct2_int8"):
        if name not in timings.samples:
            continue
        target = 1.0 / TARGETS[threads] if name == "ct2_float32" else None
        rows.append(common.Row("greedy decode", f"{size}, {where}", ours, timings.min(name), LABELS[name], "s", target))
        figures[name]["attnkit_share"] = timings.min(name) / ours  # attnkit's tokens/s over this side's
        figures[name]["attnkit_share_cpu"] = timings.cpu_min(name) / timings.cpu_min("attnkit")  # per CPU second
        figures[name]["tokens_agreeing_with_float32"] = _agreement(timings, name)
    if "ct2_float32" in timings.samples:  # the split side against CTranslate2, and its cost or gain over attnkit
        rows.append(
            common.Row(
                "greedy decode, split",
                f"{size}, {where}",
                timings.min("attnkit_split"),
                timings.min("ct2_float32"),
                LABELS["ct2_float32"],
                "s",
                1.0 / TARGETS[threads],
            )
        )
    figures["attnkit_split"]["over_attnkit"] = timings.min("attnkit") / timings.min("attnkit_split")
    if not timings.same_result("attnkit", "attnkit_split"):
        raise AssertionError("attnkit split across threads returned other tokens than attnkit in one thread")
    if "ct2_float32" in timings.samples and not timings.same_result("attnkit", "ct2_float32"):
        raise AssertionError("attnkit and CTranslate2 float32 returned different tokens; the timings compare nothing")
    return rows, {"figures": figures, "timings": timings.to_json(), "summary": timings.summary(where)}


def run(
    quick: bool = False,
    repeats: int | None = None,
    threads: int | None = None,
    workdir: Path | None = None,
    inner: int | None = None,
) -> tuple[list[common.Row], dict[str, object]]:
    """Export, then time every side in fresh processes at 2 threads and at 1 (core 0), or at ``threads`` alone;
    rows and JSON payload. ``workdir``: keep the weights and exports there and reuse them on the next run.
    ``inner``: timed decodes per process after the warm-up (default 2; 1 with ``quick``)."""
    torch.manual_seed(0)
    config = decoding.QUICK if quick else decoding.FULL
    rounds = repeats or (2 if quick else 5)
    generator = torch.Generator().manual_seed(0)
    sources = torch.randint(4, config.vocab, (config.batch, config.source_len), generator=generator).tolist()
    size = f"D={config.dim} L={config.layers} V={config.vocab} B={config.batch} S={config.source_len}"
    size += f" steps={config.steps}"
    rows: list[common.Row] = []
    settings = {}
    with tempfile.TemporaryDirectory(prefix="attnkit-bench-runtimes-") as tmp:
        directory = Path(tmp) if workdir is None else workdir
        directory.mkdir(parents=True, exist_ok=True)
        inner = inner or (1 if quick else 2)
        sides = _sides(config, directory, sources, inner=inner)
        chosen = [s for s in SETTINGS if threads in (None, s[0])]
        for count, cpus in chosen[:1] if quick and threads is None else chosen:
            timings = compare_processes(sides, rounds=rounds, threads=count, cpus=cpus, quiet=quick)
            setting_rows, settings[str(count)] = _setting_rows(timings, config, size)
            print(settings[str(count)]["summary"], flush=True)
            rows += setting_rows
    payload = {
        "quick": quick,
        "config": {
            **config.__dict__,
            "rounds": rounds,
            "inner": inner,
            "eos": "disabled (eos_id=-1)",
            "encoder_layers": 0,
        },
        "method": "each side a fresh process per round, order rotating, threads pinned; minimum over rounds",
        "ctranslate2": {"available": ct2.missing_reason() is None, "reason": ct2.missing_reason()},
        "targets": {"attnkit_share_of_ct2_float32": TARGETS, "int8_over_float32": INT8_TARGET},
        "settings": settings,
        "load_average_end": list(os.getloadavg()),
        "rows": common.rows_payload(rows),
    }
    if payload["ctranslate2"]["available"]:
        payload["ctranslate2"]["version"] = ct2.version()
    return rows, payload


def main(argv: Sequence[str] | None = None) -> list[common.Row]:
    """Command line: run, print the table, write ``<out>/decoding_runtimes.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads", type=int, choices=[count for count, _ in SETTINGS], help="time this setting only (default both)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep the saved weights and CTranslate2 exports here and reuse them when present (a run timed in a "
        "short window can skip the export); delete it after changing the model",
    )
    parser.add_argument("--inner", type=int, help="timed decodes per process after its warm-up (default 2)")
    args = common.parse_args(argv, parser.description, parser)
    rows, payload = run(args.quick, args.repeats, args.threads, args.workdir, args.inner)
    print(common.format_table(rows))
    print(f"wrote {common.write_json(NAME, payload, args.out)}")
    return rows


if __name__ == "__main__":
    main()
