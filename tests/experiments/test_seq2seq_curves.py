"""Validation curves of the seq2seq tables: read from a run's metrics.csv, kept with the row, drawn and linked."""

from __future__ import annotations

import json

from attnkit.experiments.common import ExperimentPaths
from attnkit.experiments.seq2seq.curves import plot_validation_curves, validation_curve

HEADER = "epoch,train_loss,seconds,steps,partial,valid_count,valid_wer,valid_per\n"


def _metrics_csv(run_dir, lines):
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "metrics.csv").write_text(HEADER + "".join(lines))


def test_a_curve_sums_minutes_over_epochs_and_reads_the_metric(tmp_path):
    _metrics_csv(tmp_path, ["1,1.2,120,10,0,300,44.5,11.0\n", "2,0.9,180,10,0,300,39.25,9.5\n"])
    assert validation_curve(tmp_path, "wer") == [
        {"epoch": 1, "minutes": 2.0, "value": 44.5},
        {"epoch": 2, "minutes": 5.0, "value": 39.25},
    ]
    assert validation_curve(tmp_path, "bleu") is None  # no such column
    assert validation_curve(tmp_path / "missing", "wer") is None


def test_the_plot_is_written_only_when_a_row_has_a_curve(tmp_path):
    target = tmp_path / "g2p_valid_by_minutes.png"
    assert not plot_validation_curves({"runs": {"a": {}}}, target, metric="wer", title="t")
    assert not target.exists()
    summary = {
        "runs": {"a": {"curve": [{"epoch": 1, "minutes": 2.0, "value": 40.0}]}, "b": {}},
        "peer": {"system": "Phonetisaurus", "wer": 25.79},
    }
    assert plot_validation_curves(summary, target, metric="wer", title="t")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_experiment_records_each_run_s_curve_plots_it_and_the_page_links_it(tmp_path, monkeypatch):
    from attnkit.experiments.report import render_results
    from attnkit.experiments.seq2seq import run as seq2seq

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    metrics = {"test": {"wer": 30.0, "per": 7.5}, "best_valid": {"wer": 29.0}, "best_epoch": 2, "epochs_run": 2}

    def fake_ensure_run(argv, out, threads=None, processes=1, device="auto"):
        _metrics_csv(out, ["1,1.2,60,10,0,300,35.0,9.0\n", "2,0.9,60,10,0,300,29.0,7.0\n"])
        return {**metrics, "train_seconds": 120, "num_parameters": 1000}

    monkeypatch.setattr(seq2seq, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(seq2seq, "_beam_test", lambda out, beam: {"wer": 28.5, "per": 7.0})
    seq2seq.run_seq2seq_experiment("g2p", paths, runs=["rnn, global concat, 60 min"])
    recorded = json.loads((paths.results / "g2p.json").read_text())
    row = recorded["runs"]["rnn, global concat, 60 min"]
    assert row["curve"] == [{"epoch": 1, "minutes": 1.0, "value": 35.0}, {"epoch": 2, "minutes": 2.0, "value": 29.0}]
    assert recorded["curves_plot"] == "g2p_valid_by_minutes.png"
    assert (paths.results / "g2p_valid_by_minutes.png").is_file()
    assert "![validation WER against minutes](results/g2p_valid_by_minutes.png)" in render_results(paths).read_text()

    # the run directory gone (its figures kept in the JSON): re-running the same command keeps the recorded curve
    (paths.runs / "g2p" / "rnn--global-concat--60-min" / "metrics.csv").unlink()
    monkeypatch.setattr(seq2seq, "ensure_run", lambda *a, **k: {**metrics, "train_seconds": 120, "num_parameters": 1})
    seq2seq.run_seq2seq_experiment("g2p", paths, runs=["rnn, global concat, 60 min"])
    again = json.loads((paths.results / "g2p.json").read_text())["runs"]["rnn, global concat, 60 min"]
    assert again["curve"] == row["curve"]
