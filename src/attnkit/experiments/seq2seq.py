"""The sequence-to-sequence results: G2P on CMUdict, Bible EN->ES with and without attention (BLEU by source
length, as in Bahdanau et al. 2015, Fig. 2), and Luong et al. 2015's attention variants side by side.

    attnkit experiment g2p      # Transformer and RNN with attention on the 12,000 held-out CMUdict words
    attnkit experiment bible    # no attention vs Luong vs Bahdanau vs Transformer; BLEU by length, as a PNG
    attnkit experiment luong    # global dot / general / concat, local-m, local-p on CMUdict

Each trains (or reuses, or resumes) its runs under ``runs/experiments/NAME/`` with the commands in
:data:`EXPERIMENTS`, writes ``docs/results/NAME.json`` and re-renders ``docs/results.md``. Model selection uses the
validation split only; the test split is decoded once per run, greedily. An experiment's ``ensembles`` rows decode
finished runs together (:class:`~attnkit.models.ensemble.Seq2SeqEnsemble`, what ``attnkit evaluate --checkpoint A
B`` does); nothing is tuned on them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, read_json, write_json

__all__ = ["EXPERIMENTS", "LENGTH_BUCKETS", "Seq2SeqExperiment", "render_sections", "run_seq2seq_experiment"]

_BIBLE_FIT = "--batch-size 128 --lr 2e-3 --epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 60"
_LUONG_FIT = "--model rnn --batch-size 64 --lr 1e-3 --epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 20"


@dataclass(frozen=True)
class Seq2SeqExperiment:
    """One results table: a task and the named runs compared on it (``attnkit train seq2seq`` options each)."""

    name: str
    data: str
    title: str
    runs: dict[str, str]
    beam: int = 1  # > 1: the best checkpoint is also decoded with this beam on test (recorded as test_beam)
    processes: dict[str, int] = field(default_factory=dict)  # run -> processes under torchrun (default 1)
    # name -> member runs, decoded together (Seq2SeqEnsemble) once every member has finished
    ensembles: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def train_argv(self, run: str, out: Path) -> list[str]:
        """The ``attnkit`` arguments of one run (``--resume``: an interrupted run continues where it stopped)."""
        options = shlex.split(self.runs[run])
        return ["train", "seq2seq", "--data", self.data, *options, "--seed", "0", "--out", str(out), "--resume"]


EXPERIMENTS: dict[str, Seq2SeqExperiment] = {
    "g2p": Seq2SeqExperiment(
        "g2p",
        "cmudict",
        "Grapheme-to-phoneme on CMUdict (12,000 held-out words)",
        beam=5,
        runs={
            "transformer": "--model transformer --dim 128 --ff-dim 512 --heads 4 --batch-size 64 --lr 1e-3 "
            "--epochs 200 --patience 6 --lr-decay 0.5 --label-smoothing 0.1 --max-minutes 60",
            "rnn, global concat, 60 min": "--model rnn --attention luong-concat --batch-size 64 --lr 1e-3 --epochs 200 "
            "--patience 6 --lr-decay 0.5 --max-minutes 60",
            # both cores on one run: 64 words per process and step (128 in all), twice the rate, a short warm-up
            "rnn, global concat, 2 processes": "--model rnn --attention luong-concat --batch-size 64 --lr 2e-3 "
            "--warmup-steps 300 --epochs 200 --patience 6 --lr-decay 0.5 --max-minutes 60",
        },
        processes={"rnn, global concat, 2 processes": 2},
        # the two one-core runs, trained side by side: 60 minutes of the two cores in all
        ensembles={"ensemble: rnn, global concat, 60 min + transformer": ("rnn, global concat, 60 min", "transformer")},
    ),
    "bible": Seq2SeqExperiment(
        "bible",
        "bible-en-es",
        "Bible EN→ES (King James → Reina-Valera 1909), held-out chapters",
        {
            "none": f"--model rnn --attention none {_BIBLE_FIT}",
            "luong-general": f"--model rnn --attention luong-general {_BIBLE_FIT}",
            "bahdanau": f"--model rnn --attention bahdanau {_BIBLE_FIT}",
            # Adam without a warm-up left the Transformer behind (BLEU 0.3 after 8 minutes at lr 2e-3)
            "transformer": "--model transformer --batch-size 128 --lr 1e-3 --warmup-steps 600 --label-smoothing 0.1 "
            "--epochs 50 --patience 4 --lr-decay 0.5 --max-minutes 60",
        },
    ),
    "luong": Seq2SeqExperiment(
        "luong",
        "cmudict",
        "Luong et al. 2015's attention variants (GRU encoder-decoder, CMUdict)",
        {
            "global dot": f"--attention luong-dot {_LUONG_FIT}",
            "global general": f"--attention luong-general {_LUONG_FIT}",
            "global concat": f"--attention luong-concat {_LUONG_FIT}",
            "local-m (general)": f"--attention local-m {_LUONG_FIT}",
            "local-p (general)": f"--attention local-p {_LUONG_FIT}",
        },
    ),
}
# Source-length buckets (English words) for BLEU by length: (low, high) inclusive.
LENGTH_BUCKETS = ((1, 15), (16, 25), (26, 35), (36, 45), (46, 1000))


def run_seq2seq_experiment(
    name: str, paths: ExperimentPaths, *, threads: int | None = None, runs: list[str] | None = None
) -> dict:
    """Train (or reuse) the experiment's runs (all, or those named in ``runs``), write and return its JSON."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown seq2seq experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    experiment = EXPERIMENTS[name]
    unknown = sorted(set(runs or []) - set(experiment.runs) - set(experiment.ensembles))
    if unknown:
        known = [*experiment.runs, *experiment.ensembles]
        raise ValueError(f"{name} has no run {', '.join(unknown)}; its runs: {', '.join(known)}")
    ensembles = [run for run in runs or experiment.ensembles if run in experiment.ensembles]
    runs = [run for run in runs or experiment.runs if run in experiment.runs]
    for ensemble in ensembles:  # an ensemble needs its members trained first
        runs += [member for member in experiment.ensembles[ensemble] if member not in runs]
    summary_path = paths.results / f"{name}.json"
    summary = {**(read_json(summary_path) or {"runs": {}}), **_header(experiment, name)}
    for run in runs:
        out = paths.runs / name / _slug(run)
        argv = experiment.train_argv(run, out)
        processes = experiment.processes.get(run, 1)
        metrics = ensure_run(argv, out, threads=threads, processes=processes)
        row = {
            "command": command_line(argv, processes),
            "test": metrics["test"],
            "best_valid": metrics["best_valid"],
            "best_epoch": metrics["best_epoch"],
            "epochs_run": metrics["epochs_run"],
            "minutes": round(metrics["train_seconds"] / 60, 1),
            "num_parameters": metrics["num_parameters"],
        }
        if name == "bible":
            row["bleu_by_length"] = bleu_by_length(out / "best")
        if experiment.beam > 1:
            previous = summary["runs"].get(run, {})
            same = previous.get("command") == row["command"] and previous.get("beam") == experiment.beam
            row["beam"] = experiment.beam
            row["test_beam"] = (
                previous["test_beam"] if same and "test_beam" in previous else _beam_test(out, experiment.beam)
            )
        # re-read just before writing: another `experiment NAME --only ...` process may have added its row meanwhile
        summary = {**(read_json(summary_path) or {"runs": {}}), **_header(experiment, name)}
        summary["runs"][run] = row
        write_json(summary_path, summary)
    for ensemble in ensembles:
        members = experiment.ensembles[ensemble]
        summary = {**(read_json(summary_path) or {"runs": {}}), **_header(experiment, name)}
        outs = [paths.runs / name / _slug(member) for member in members]
        summary["runs"][ensemble] = _ensemble_row(experiment, outs, summary["runs"], ensemble)
        write_json(summary_path, summary)
    if name == "bible":
        plot_bleu_by_length(summary, paths.results / "bible_bleu_by_length.png")
        write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _header(experiment: Seq2SeqExperiment, name: str) -> dict[str, str]:
    """The summary's fields that describe the table rather than a run."""
    return {"title": experiment.title, "data": experiment.data, "command": command_line(["experiment", name])}


def _ensemble_row(experiment: Seq2SeqExperiment, outs: list[Path], rows: dict, ensemble: str) -> dict:
    """The table row of ``ensemble`` (its members' runs in ``outs``, their rows in ``rows``): test (greedy and,
    with ``experiment.beam``, beam) and valid metrics, reused while the members' commands are unchanged."""
    from attnkit.data.seq2seq import load_task
    from attnkit.training.seq2seq_inference import evaluate_seq2seq, load_seq2seq_ensemble

    checkpoints = [str(out / "best") for out in outs]
    argv = ["evaluate", "--checkpoint", *checkpoints]
    member_rows = {member: rows[member] for member in experiment.ensembles[ensemble]}
    previous = rows.get(ensemble, {})
    if previous.get("members") == {m: r["command"] for m, r in member_rows.items()}:
        return previous
    loaded = load_seq2seq_ensemble(checkpoints)
    task = load_task(loaded.config.data)

    def scores(split: str, beam: int) -> dict[str, float]:
        metrics = evaluate_seq2seq(loaded, task.split(split), task.references_for(split), beam_size=beam)
        return {key: round(float(value), 2) for key, value in metrics.items()}

    row = {
        "command": command_line(argv),
        "members": {m: r["command"] for m, r in member_rows.items()},
        "test": scores("test", 1),
        "best_valid": scores("valid", 1),
        "best_epoch": None,
        "epochs_run": " + ".join(str(r["epochs_run"]) for r in member_rows.values()),
        "minutes": max(r["minutes"] for r in member_rows.values()),  # trained side by side, one core each
        "num_parameters": sum(r["num_parameters"] for r in member_rows.values()),
    }
    if experiment.beam > 1:
        row |= {"beam": experiment.beam, "test_beam": scores("test", experiment.beam)}
        row["command_beam"] = command_line([*argv, "--beam", str(experiment.beam)])
    return row


def _beam_test(out: Path, beam: int) -> dict[str, float]:
    """The best checkpoint's test metrics with beam search (``beam`` hypotheses, length penalty 1)."""
    from attnkit.data.seq2seq import load_task
    from attnkit.training.seq2seq_inference import evaluate_seq2seq, load_seq2seq

    loaded = load_seq2seq(out / "best")
    task = load_task(loaded.config.data)
    metrics = evaluate_seq2seq(loaded, task.split("test"), task.references_for("test"), beam_size=beam)
    return {key: round(float(value), 2) for key, value in metrics.items()}


def bleu_by_length(checkpoint: Path) -> list[dict]:
    """Corpus BLEU of the test split in each source-length bucket (greedy decoding)."""
    from attnkit.data.seq2seq import load_task
    from attnkit.training.seq2seq_inference import evaluate_seq2seq, load_seq2seq

    loaded = load_seq2seq(checkpoint)
    task = load_task(loaded.config.data)
    pairs, references = task.split("test"), task.references_for("test")
    buckets = []
    for low, high in LENGTH_BUCKETS:
        chosen = [i for i, (source, _) in enumerate(pairs) if low <= len(source.split()) <= high]
        if not chosen:
            continue
        metrics = evaluate_seq2seq(loaded, [pairs[i] for i in chosen], [references[i] for i in chosen])
        buckets.append({"low": low, "high": high, "count": len(chosen), "bleu": round(metrics["bleu"], 2)})
    return buckets


def plot_bleu_by_length(summary: dict, target: Path) -> None:
    """BLEU against source length, one line per model (matplotlib's Agg canvas; no pyplot, no display)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.6, 4.0))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for run, row in summary["runs"].items():
        buckets = row.get("bleu_by_length") or []
        if buckets:
            labels = [_bucket_label(b) for b in buckets]
            axes.plot(labels, [b["bleu"] for b in buckets], marker="o", label=run)
    axes.set_xlabel("source length (English words)")
    axes.set_ylabel("test BLEU (greedy)")
    axes.set_title("Bible EN→ES: BLEU by source length")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)  # beside the plot: never over a line
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=100)
    summary["plot"] = target.name


def render_sections(results: Path) -> list[str]:
    """The markdown sections of the three experiments (or a line saying how to run each)."""
    sections = []
    for name, experiment in EXPERIMENTS.items():
        summary = read_json(results / f"{name}.json")
        lines = [f"## {experiment.title}", ""]
        if not summary or not summary.get("runs"):
            lines.append(f"_Not run yet: `attnkit experiment {name}`._")
        else:
            if name == "g2p":  # the RNN with attention: the best Luong variant (same split, same metrics)
                summary = _with_best_rnn(summary, read_json(results / "luong.json"))
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
    if text and summary.get("plot"):
        labels = [_bucket_label(b) for b in next(iter(summary["runs"].values()))["bleu_by_length"]]
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


def _bucket_label(bucket: dict) -> str:
    return f"{bucket['low']}+" if bucket["high"] >= 1000 else f"{bucket['low']}–{bucket['high']}"


def _slug(run: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in run).strip("-")
