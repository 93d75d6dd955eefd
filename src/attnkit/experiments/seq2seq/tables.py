"""The markdown of the sequence-to-sequence results tables (``docs/results.md``), from what
:mod:`attnkit.experiments.seq2seq` recorded in ``docs/results/NAME.json``."""

from __future__ import annotations

import shlex
from pathlib import Path

from attnkit.experiments.results_schema import read_results
from attnkit.experiments.seq2seq.settings import EXPERIMENTS

__all__ = ["bucket_label", "render_sections"]


def render_sections(results: Path) -> list[str]:
    """The markdown sections of the three experiments (or a line saying how to run each)."""
    sections = []
    for name, experiment in EXPERIMENTS.items():
        summary = read_results(results, name)
        lines = [f"## {experiment.title}", ""]
        if not summary or not (summary.get("runs") or summary.get("peer")):
            lines.append(f"_Not run yet: `attnkit experiment {name}`._")
        else:
            if name == "g2p":  # the RNN with attention: the best Luong variant (same split, same metrics)
                summary = _with_best_rnn(summary, read_results(results, "luong"))
            lines += _table(name, summary)
            missing = [run for run in [*experiment.runs, *experiment.ensembles] if run not in summary["runs"]]
            if missing:
                commands = (f"{run} (`attnkit experiment {name} --only {shlex.quote(run)}`)" for run in missing)
                lines += ["", f"_Not run yet: {'; '.join(commands)}._"]
        notes = results / f"{name}_notes.md"
        if notes.exists():
            lines += ["", notes.read_text().rstrip()]
        sections.append("\n".join(lines) + "\n")
    return sections


def _table(name: str, summary: dict) -> list[str]:
    lines = [f"`{summary['command']}` (one command per row below; greedy decoding, seed 0)", ""]
    text = summary["data"] == "bible-en-es"
    if text:
        lines += [
            "| model | test BLEU | test chrF | valid BLEU | minutes | epochs | command |",
            "|---|---|---|---|---|---|---|",
        ]
    else:
        lines += [
            "| model | test WER % | test PER % | test WER / PER, beam | valid WER % | minutes | epochs | command |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for run, row in summary["runs"].items():
        test, valid = row["test"], row["best_valid"]
        first, second, selected = ("bleu", "chrf", "bleu") if text else ("wer", "per", "wer")
        beam = ""
        if not text:
            beam_test = row.get("test_beam")
            beam = f" {beam_test['wer']:.2f} / {beam_test['per']:.2f} (k={row['beam']}) |" if beam_test else " – |"
        lines.append(
            f"| {run} | {test[first]:.2f} | {test[second]:.2f} |{beam} {valid[selected]:.2f} | {row['minutes']:.1f} "
            f"| {row['epochs_run']} | `{row['command']}` |"
        )
    peer = summary.get("peer")
    if peer and not text:
        lines.append(
            f"| **peer:** Phonetisaurus {peer['version']} (order-{peer['order']} joint n-gram WFST, same split and "
            f"scorer) | {peer['wer']:.2f} | {peer['per']:.2f} | – | – | {peer['train_cpu_seconds'] / 60:.1f} (CPU) | – "
            f"| `{peer['command']}` |"
        )
    if summary.get("curves_plot"):
        metric = "BLEU" if text else "WER"
        lines += [
            "",
            f"Validation {metric} against training minutes, for the rows whose runs recorded a curve "
            "(`curve` in the JSON, from each run's `metrics.csv`):",
            "",
            f"![validation {metric} against minutes](results/{summary['curves_plot']})",
        ]
    if text and summary.get("plot"):
        labels = [bucket_label(b) for b in next(iter(summary["runs"].values()))["bleu_by_length"]]
        lines += ["", "Test BLEU by source length (English words):", ""]
        lines += ["| model | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for run, row in summary["runs"].items():
            lines.append(f"| {run} | " + " | ".join(f"{b['bleu']:.2f}" for b in row["bleu_by_length"]) + " |")
        lines += ["", f"![BLEU by source length](results/{summary['plot']})"]
    return lines


def _with_best_rnn(g2p: dict, luong: dict | None) -> dict:
    """The G2P summary plus the Luong table's best run by validation WER, named as such."""
    if not luong or not luong.get("runs"):
        return g2p
    run, row = min(luong["runs"].items(), key=lambda item: item[1]["best_valid"]["wer"])
    return {**g2p, "runs": {**g2p["runs"], f"RNN, {run} (best of the Luong table, by validation WER)": row}}


def bucket_label(bucket: dict) -> str:
    return f"{bucket['low']}+" if bucket["high"] >= 1000 else f"{bucket['low']}–{bucket['high']}"
