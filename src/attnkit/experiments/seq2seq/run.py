"""The sequence-to-sequence results: G2P on CMUdict, Bible EN->ES with and without attention (BLEU by source
length, as in Bahdanau et al. 2015, Fig. 2), and Luong et al. 2015's attention variants side by side.

    attnkit experiment g2p      # Transformer and RNN with attention on the 12,000 held-out CMUdict words
    attnkit experiment bible    # no attention vs Luong vs Bahdanau vs Transformer; BLEU by length, as a PNG
    attnkit experiment luong    # global dot / general / concat, local-m, local-p on CMUdict

Each trains (or reuses, or resumes) its runs under ``runs/experiments/NAME/`` and writes ``docs/results/NAME.json``.
Model selection uses the validation split only; the test split is decoded once per run, greedily. ``ensembles`` rows
decode finished runs together (what ``attnkit evaluate --checkpoint A B`` does); nothing is tuned on them.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, command_line, ensure_run, read_json, write_json
from attnkit.experiments.seq2seq.curves import plot_validation_curves, validation_curve
from attnkit.experiments.seq2seq.settings import EXPERIMENTS, LENGTH_BUCKETS, Seq2SeqExperiment, slug
from attnkit.experiments.seq2seq.tables import bucket_label

__all__ = ["bleu_by_length", "plot_bleu_by_length", "run_seq2seq_experiment"]


def run_seq2seq_experiment(
    name: str,
    paths: ExperimentPaths,
    *,
    threads: int | None = None,
    runs: list[str] | None = None,
    device: str = "auto",
) -> dict:
    """Train (or reuse) the experiment's runs (all, or those named in ``runs``), write and return its JSON."""
    runs, ensembles, with_peer = _selection(name, runs)
    experiment = EXPERIMENTS[name]
    summary_path = paths.results / f"{name}.json"
    summary = _read_summary(summary_path, experiment)
    if with_peer:
        summary["peer"] = _peer_row(experiment, paths, summary.get("peer"))
        write_json(summary_path, summary)
    for run in runs:
        row = _run_row(experiment, paths, run, summary["runs"].get(run, {}), threads=threads, device=device)
        # re-read just before writing: another `experiment NAME --only ...` process may have added its row meanwhile
        summary = _read_summary(summary_path, experiment)
        summary["runs"][run] = row
        write_json(summary_path, summary)
    for ensemble in ensembles:
        members = experiment.ensembles[ensemble]
        summary = _read_summary(summary_path, experiment)
        outs = [paths.runs / name / slug(member) for member in members]
        summary["runs"][ensemble] = _ensemble_row(experiment, outs, summary["runs"], ensemble)
        write_json(summary_path, summary)
    if name == "bible":
        plot_bleu_by_length(summary, paths.results / "bible_bleu_by_length.png")
        write_json(summary_path, summary)
    curves = paths.results / f"{name}_valid_by_minutes.png"
    if plot_validation_curves(summary, curves, metric=_curve_metric(experiment), title=experiment.title):
        summary["curves_plot"] = curves.name
        write_json(summary_path, summary)
    from attnkit.experiments.report import render_results

    render_results(paths)
    return summary


def _selection(name: str, runs: list[str] | None) -> tuple[list[str], list[str], bool]:
    """``(runs to train, ensembles to decode, whether the peer runs)`` of experiment ``name`` for ``runs`` (None:
    all); an ensemble's members join the runs. Raises ``ValueError`` on an unknown experiment or run."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown seq2seq experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")
    experiment = EXPERIMENTS[name]
    peers = [experiment.peer] if experiment.peer else []
    unknown = sorted(set(runs or []) - set(experiment.runs) - set(experiment.ensembles) - set(peers))
    if unknown:
        known = [*experiment.runs, *experiment.ensembles, *peers]
        raise ValueError(f"{name} has no run {', '.join(unknown)}; its runs: {', '.join(known)}")
    with_peer = bool(peers) and (runs is None or experiment.peer in runs)
    ensembles = [run for run in runs or experiment.ensembles if run in experiment.ensembles]
    runs = [run for run in runs or experiment.runs if run in experiment.runs]
    for ensemble in ensembles:  # an ensemble needs its members trained first
        runs += [member for member in experiment.ensembles[ensemble] if member not in runs]
    return runs, ensembles, with_peer


def _read_summary(path: Path, experiment: Seq2SeqExperiment) -> dict:
    """The experiment's JSON as it stands on disk (no rows yet when there is none), under today's header."""
    return {**(read_json(path) or {"runs": {}}), **_header(experiment, experiment.name)}


def _run_row(
    experiment: Seq2SeqExperiment, paths: ExperimentPaths, run: str, previous: dict, *, threads: int | None, device: str
) -> dict:
    """Train (or reuse) ``run`` and return its row; what is costly to recompute (the validation curve, the beam
    decoding) is kept from the ``previous`` row while its command is unchanged."""
    out = paths.runs / experiment.name / slug(run)
    argv = experiment.train_argv(run, out)
    processes = experiment.processes.get(run, 1)
    metrics = ensure_run(argv, out, threads=threads, processes=processes, device=device)
    row = {
        "command": command_line(argv, processes),
        "test": metrics["test"],
        "best_valid": metrics["best_valid"],
        "best_epoch": metrics["best_epoch"],
        "epochs_run": metrics["epochs_run"],
        "minutes": round(metrics["train_seconds"] / 60, 1),
        "num_parameters": metrics["num_parameters"],
    }
    if experiment.name == "bible":
        row["bleu_by_length"] = bleu_by_length(out / "best")
    curve = validation_curve(out, _curve_metric(experiment))
    if curve or (previous.get("command") == row["command"] and previous.get("curve")):
        row["curve"] = curve or previous["curve"]
    if experiment.beam > 1:
        same = previous.get("command") == row["command"] and previous.get("beam") == experiment.beam
        row["beam"] = experiment.beam
        row["test_beam"] = (
            previous["test_beam"] if same and "test_beam" in previous else _beam_test(out, experiment.beam)
        )
    return row


def _curve_metric(experiment: Seq2SeqExperiment) -> str:
    """The validation metric a table's curves plot: BLEU for translation, WER for the symbol tasks."""
    return "bleu" if experiment.data == "bible-en-es" else "wer"


def _peer_row(experiment: Seq2SeqExperiment, paths: ExperimentPaths, previous: dict | None) -> dict:
    """The classical peer's row: Phonetisaurus trained on the data set's training split, decoded on its test words and
    scored by attnkit's scorer (reused while its package version and n-gram order are unchanged)."""
    from attnkit.data.seq2seq import load_data_set
    from attnkit.tasks.seq2seq.phonetisaurus import phonetisaurus_baseline, phonetisaurus_version

    order = 8
    if previous and previous.get("order") == order and previous.get("version") == phonetisaurus_version():
        return previous
    workdir = paths.runs / experiment.name / experiment.peer
    row = phonetisaurus_baseline(load_data_set(experiment.data), workdir, order=order)
    row["command"] = command_line(["experiment", experiment.name, "--only", experiment.peer])
    return row


def _header(experiment: Seq2SeqExperiment, name: str) -> dict[str, str]:
    """The summary's fields that describe the table rather than a run."""
    return {"title": experiment.title, "data": experiment.data, "command": command_line(["experiment", name])}


def _ensemble_row(experiment: Seq2SeqExperiment, outs: list[Path], rows: dict, ensemble: str) -> dict:
    """The table row of ``ensemble`` (its members' runs in ``outs``, their rows in ``rows``): test (greedy and,
    with ``experiment.beam``, beam) and valid metrics, reused while the members' commands are unchanged."""
    from attnkit.data.seq2seq import load_data_set
    from attnkit.tasks.seq2seq.inference import load_seq2seq_ensemble

    checkpoints = [str(out / "best") for out in outs]
    argv = ["evaluate", "--checkpoint", *checkpoints]
    member_rows = {member: rows[member] for member in experiment.ensembles[ensemble]}
    previous = rows.get(ensemble, {})
    if previous.get("members") == {m: r["command"] for m, r in member_rows.items()}:
        return previous
    loaded = load_seq2seq_ensemble(checkpoints)
    data = load_data_set(loaded.config.data)
    row = {
        "command": command_line(argv),
        "members": {m: r["command"] for m, r in member_rows.items()},
        "test": _scores(loaded, data, "test", 1),
        "best_valid": _scores(loaded, data, "valid", 1),
        "best_epoch": None,
        "epochs_run": " + ".join(str(r["epochs_run"]) for r in member_rows.values()),
        "minutes": max(r["minutes"] for r in member_rows.values()),  # trained side by side, one core each
        "num_parameters": sum(r["num_parameters"] for r in member_rows.values()),
    }
    if experiment.beam > 1:
        row |= {"beam": experiment.beam, "test_beam": _scores(loaded, data, "test", experiment.beam)}
        row["command_beam"] = command_line([*argv, "--beam", str(experiment.beam)])
    return row


def _beam_test(out: Path, beam: int) -> dict[str, float]:
    """The best checkpoint's test metrics with beam search (``beam`` hypotheses, length penalty 1)."""
    from attnkit.data.seq2seq import load_data_set
    from attnkit.tasks.seq2seq.inference import load_seq2seq

    loaded = load_seq2seq(out / "best")
    return _scores(loaded, load_data_set(loaded.config.data), "test", beam)


def _scores(loaded, data, split: str, beam: int) -> dict[str, float]:
    """``loaded``'s metrics on ``data``'s ``split`` with ``beam`` hypotheses, to two decimals."""
    from attnkit.tasks.seq2seq.inference import evaluate_seq2seq

    metrics = evaluate_seq2seq(loaded, data.split(split), data.references_for(split), beam_size=beam)
    return {key: round(float(value), 2) for key, value in metrics.items()}


def bleu_by_length(checkpoint: Path) -> list[dict]:
    """Corpus BLEU of the test split in each source-length bucket (greedy decoding)."""
    from attnkit.data.seq2seq import load_data_set
    from attnkit.tasks.seq2seq.inference import evaluate_seq2seq, load_seq2seq

    loaded = load_seq2seq(checkpoint)
    data = load_data_set(loaded.config.data)
    pairs, references = data.split("test"), data.references_for("test")
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
            labels = [bucket_label(b) for b in buckets]
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
