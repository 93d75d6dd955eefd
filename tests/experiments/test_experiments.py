"""The experiments behind docs/results.md: their commands parse, the page renders from recorded JSON, and the
masking experiment's padding statistics measure what they claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkit.cli import build_parser, main
from attnkit.experiments import classification
from attnkit.experiments.common import ExperimentPaths, mean_std
from attnkit.experiments.masking import run as masking
from attnkit.experiments.report import render_results
from attnkit.experiments.seq2seq.settings import EXPERIMENTS

POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]


def all_training_commands() -> list[list[str]]:
    commands = [classification.train_argv(data, 0, Path("out")) for data in classification.DATASETS]
    commands += [
        masking.train_argv("fine-foods", model, mode, 0, Path("out"))
        for model in masking.MODELS
        for mode in ("masked", "unmasked", "renormalised")
    ]
    commands += [e.train_argv(run, Path("out")) for e in EXPERIMENTS.values() for run in e.runs]
    return commands


@pytest.mark.parametrize("argv", all_training_commands(), ids=lambda argv: " ".join(argv[:4]))
def test_every_experiment_command_is_a_valid_attnkit_command_within_its_time_budget(argv):
    args = build_parser().parse_args(argv)
    assert args.resume
    if args.max_minutes is None:  # a fixed length, so the same command trains the same model anywhere (issue #23)
        assert args.schedule == "cosine" and (args.max_steps is not None or args.epochs <= 20)
        return
    # the issues' training budgets per run: up to 3 hours for a seq2seq model (issue #16), 20 minutes for classifiers
    limit = 180 if args.data in ("cmudict", "bible-en-es") else 20
    assert 0 < args.max_minutes <= limit


def test_mean_std():
    assert mean_std([1.0, 2.0, 3.0]) == (2.0, 1.0)
    assert mean_std([5.0]) == (5.0, 0.0)


def write(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def test_the_results_page_renders_recorded_tables_and_says_what_is_not_run(tmp_path):
    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    run = {"seed": 0, "test_accuracy": 96.5, "valid_accuracy": 96.0, "best_epoch": 4, "minutes": 3.0}
    write(
        paths.results / "classification.json",
        {
            "r8": {
                "command": "attnkit experiment classification --data r8 --seeds 2",
                "run_command": "attnkit train classify --data r8 ...",
                "runs": [run, {**run, "seed": 1, "test_accuracy": 97.5}],
                "test_accuracy_mean": 97.0,
                "test_accuracy_std": 0.7071,
                "minutes_mean": 3.0,
                "baseline": {"test_accuracy": 97.67, "minutes": 0.1},
                "published_text_gcn": 97.07,
                "target": 98.0,
                "ensemble": {"members": 2, "test_accuracy": 97.72, "training_minutes": 6.0, "command": "attnkit ev"},
            }
        },
    )
    mode = {
        "runs": [],
        "test_accuracy_mean": 80.0,
        "test_accuracy_std": 0.5,
        "bucketed_test_accuracy_mean": 80.1,
        "bucketed_test_accuracy_std": 0.4,
        "padding_mass_mean": 0.0,
        "padding_mass_std": 0.0,
    }
    modes = {
        "masked": mode,
        "unmasked": {**mode, "test_accuracy_mean": 75.0, "padding_mass_mean": 0.4},
        "renormalised": {**mode, "test_accuracy_mean": 80.02},
    }
    han_modes = {name: {**row, "sentence_padding_mass_mean": 0.25, "sentence_padding_mass_std": 0.05}
                 for name, row in modes.items()}  # fmt: skip
    write(
        paths.results / "masking.json",
        {
            "data": "fine-foods",
            "seeds": 5,
            "command": "attnkit experiment masking --data fine-foods --seeds 5",
            "models": {
                "han": {"run_command": "attnkit train classify --model han ...", "modes": han_modes},
                "pooled": {"run_command": "attnkit train classify --model pooled ...", "modes": modes},
            },
        },
    )
    (paths.results / "demo.md").write_text("## The demo\n\nhand-written\n")
    page = render_results(paths).read_text()
    assert "| r8 | 97.00 ± 0.71 (2) | 97.67 | **no** | 97.07 | ≥ 98.00 | **no** | 3.0 |" in page
    assert (
        "| r8 | ensemble of the 2 seeds: 97.72 | 97.67 | yes | 97.07 | ≥ 98.00 | **no** | 6.0 in all | `attnkit ev` |"
        in page
    )
    assert "## The demo\n\nhand-written" in page
    assert (
        "- embeddings + one-head attention pooling: unmasked (b) put 40.0% of a row's attention on padding and "
        "scored -5.00 points against masked (a), beyond the seeds' spread (0.50)" in page
    )
    assert (
        "| HAN, BiGRUs over the padding (not packed) | (b) not masked (scored like tokens) | 75.00 ± 0.50 "
        "| 80.10 ± 0.40 | 0.400 ± 0.000 | 0.250 ± 0.050 | – |" in page
    )
    assert "| embeddings + one-head attention pooling | (a) masked in the softmax | 80.00 ± 0.50 " in page
    assert "Renormalised (c) scored +0.02 against (a)." in page
    assert "_Not run yet: `attnkit experiment g2p`._" in page and "_Not run yet: `attnkit experiment bible`._" in page


@pytest.fixture(scope="module")
def tiny_runs(tmp_path_factory):
    """A masked and an unmasked attention-pooling classifier trained briefly on a small separable CSV."""
    root = tmp_path_factory.mktemp("masking")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    train = root / "train.csv"
    train.write_text("text,label\n" + "\n".join(f'"{text}",{label}' for text, label in rows) + "\n")
    runs = {}
    models = {
        "pooled": ["--model", "pooled", "--encoder", "none", "--epochs", "3"],
        "han": ["--model", "han", "--unpacked-rnn", "--epochs", "1"],
    }
    for model, options in models.items():
        for mode in ("masked", "unmasked"):
            out = root / model / mode
            status = main(
                ["train", "classify", "--data", str(train), *options, "--hidden", "8",
                 "--attention-padding", mode, "--random-batches", "--embed-dim", "16",
                 "--batch-size", "4", "--vocab-size", "100", "--out", str(out), "--no-progress"]
            )  # fmt: skip
            assert status == 0
            runs[model, mode] = out / "best"
    return runs


def test_padding_statistics_masked_puts_no_weight_on_padding_unmasked_does(tiny_runs):
    texts = POSITIVE + NEGATIVE + ["great"]  # one short document: every batch it lands in carries padding
    labels = [1, 1, 1, 0, 0, 0, 1]
    masked = masking.padding_statistics(tiny_runs["pooled", "masked"], texts, labels, batch_size=7)
    unmasked = masking.padding_statistics(tiny_runs["pooled", "unmasked"], texts, labels, batch_size=7)
    assert masked["padding_mass"] == 0.0
    assert unmasked["padding_mass"] > 0.01
    assert 0 <= masked["test_accuracy"] <= 100
    # one batch of 7 documents of 5, 7, 5, 5, 6, 5 tokens and 1 ("great"), padded to 7: 15 padded slots of 49
    assert masked["padding_share"] == unmasked["padding_share"] == round(15 / 49, 4)
    assert "sentence_padding_mass" not in masked


def test_padding_statistics_of_the_unpacked_han_measure_words_and_sentences(tiny_runs):
    texts = ["great taste . lovely smell and great price", "awful", *POSITIVE]
    labels = [1, 0, 1, 1, 1]
    masked = masking.padding_statistics(tiny_runs["han", "masked"], texts, labels, batch_size=5)
    unmasked = masking.padding_statistics(tiny_runs["han", "unmasked"], texts, labels, batch_size=5)
    assert masked["padding_mass"] == 0.0 and masked["sentence_padding_mass"] == 0.0
    assert unmasked["padding_mass"] > 0.01  # "awful" sits among longer sentences: its padded words take weight
    assert unmasked["sentence_padding_mass"] > 0.01  # and the one-sentence documents put weight on padded sentences
    assert 0 < masked["padding_share"] < 1


def test_experiment_command_errors(tmp_path, capsys):
    assert main(["experiment", "classification", "--data", "imdb", "--docs", str(tmp_path)]) == 2
    assert "no classification setting for imdb" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="2"):  # an option of other experiments: argparse refuses it
        main(["experiment", "classification", "--only", "x", "--docs", str(tmp_path)])
    assert "unrecognized arguments: --only x" in capsys.readouterr().err
    assert main(["experiment", "masking", "--only", "x", "--docs", str(tmp_path)]) == 2
    assert "no masking model x; choose from han, pooled" in capsys.readouterr().err
    assert main(["experiment", "bible", "--only", "lstm", "--docs", str(tmp_path)]) == 2
    assert "bible has no run lstm" in capsys.readouterr().err
    assert main(["experiment", "report", "--docs", str(tmp_path / "missing")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main(["experiment", "report", "--docs", str(tmp_path)]) == 0
    assert (tmp_path / "results.md").read_text().startswith("# Results")


def test_a_finished_run_of_the_same_command_is_reused_and_any_other_is_trained(tmp_path, monkeypatch):
    from attnkit.experiments import common

    calls = []

    def fake_run(argv, processes=1):
        calls.append(argv)
        (tmp_path / "metrics.json").write_text(json.dumps({"test": {"accuracy": 0.5}}))

    monkeypatch.setattr(common, "run_command", fake_run)
    argv = ["train", "classify", "--data", "r8", "--out", str(tmp_path), "--resume"]
    assert common.ensure_run(argv, tmp_path, threads=1) == {"test": {"accuracy": 0.5}}
    # nothing to resume yet (no last/): the run starts as a new one, since training refuses --resume without last/
    assert calls == [[*argv[:-1], "--no-progress", "--threads", "1"]]
    common.ensure_run(argv, tmp_path)  # finished, same command: reused
    assert len(calls) == 1
    (tmp_path / "last").mkdir()
    common.ensure_run([*argv, "--seed", "1"], tmp_path)  # another command in the same directory: trained
    assert len(calls) == 2 and "--resume" in calls[-1]  # an interrupted run (last/) is resumed


def test_a_run_on_several_processes_trains_under_torchrun_and_says_so(tmp_path, monkeypatch):
    import subprocess
    import sys

    from attnkit.experiments import common

    calls = []

    def fake_subprocess_run(command, check):
        calls.append(command)
        (tmp_path / "metrics.json").write_text(json.dumps({"test": {"wer": 30.0}}))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(common.subprocess, "run", fake_subprocess_run)
    argv = ["train", "seq2seq", "--data", "cmudict", "--out", str(tmp_path), "--resume"]
    assert common.ensure_run(argv, tmp_path, threads=1, processes=2) == {"test": {"wer": 30.0}}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m", "attnkit.cli"]
    assert calls == [[*torchrun, *argv[:-1], "--no-progress", "--threads", "1"]]
    assert common.command_line(argv, 2).startswith("torchrun --nproc-per-node 2 -m attnkit.cli train seq2seq")
    common.ensure_run(argv, tmp_path, processes=2)  # finished, same command and processes: reused
    assert len(calls) == 1
    run_command = common.run_command
    monkeypatch.setattr(common, "run_command", lambda argv, processes=1: calls.append(("in-process", processes)))
    common.ensure_run(argv, tmp_path)  # the same arguments on one process are another run: trained
    assert calls[-1] == ("in-process", 1)
    monkeypatch.setattr(common.subprocess, "run", lambda command, check: subprocess.CompletedProcess(command, 1))
    with pytest.raises(RuntimeError, match=r"torchrun --nproc-per-node 2 -m attnkit.cli .* exited with status 1"):
        run_command(argv, 2)
    with pytest.raises(ValueError, match="processes must be >= 1"):
        common.command_line(argv, 0)


def test_the_g2p_table_shows_beam_search_figures_where_recorded(tmp_path):
    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    row = {
        "command": "attnkit train seq2seq --data cmudict ...",
        "test": {"wer": 30.0, "per": 7.5},
        "best_valid": {"wer": 29.0},
        "best_epoch": 9,
        "epochs_run": 10,
        "minutes": 59.5,
        "num_parameters": 1000,
    }
    runs = {"rnn": {**row, "beam": 5, "test_beam": {"wer": 28.25, "per": 7.0}}, "transformer": row}
    write(paths.results / "g2p.json", {"data": "cmudict", "command": "attnkit experiment g2p", "runs": runs})
    page = render_results(paths).read_text()
    assert "| rnn | 30.00 | 7.50 | 28.25 / 7.00 (k=5) | 29.00 | 59.5 | 10 |" in page
    assert "| transformer | 30.00 | 7.50 | – | 29.00 | 59.5 | 10 |" in page
    # the experiment's own runs missing from the JSON are named, with the command that trains each
    assert "`attnkit experiment g2p --only 'rnn, global concat, 2 processes'`" in page


def test_a_row_another_process_wrote_meanwhile_survives(tmp_path, monkeypatch):
    """Two `attnkit experiment g2p --only ...` processes at once: each keeps the other's row."""
    from attnkit.experiments.seq2seq import run as seq2seq

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    summary_path = paths.results / "g2p.json"
    write(summary_path, {"runs": {}})
    metrics = {"test": {"wer": 30.0, "per": 7.5}, "best_valid": {"wer": 29.0}, "best_epoch": 9, "epochs_run": 10}
    other = {**metrics, "command": "attnkit train seq2seq ...", "minutes": 60.0, "num_parameters": 10}

    def fake_ensure_run(argv, out, threads=None, processes=1, device="auto"):
        # while this run trains, the other process finishes and records its row
        write(summary_path, {**json.loads(summary_path.read_text()), "runs": {"transformer": other}})
        return {**metrics, "train_seconds": 600, "num_parameters": 1000}

    monkeypatch.setattr(seq2seq, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(seq2seq, "_beam_test", lambda out, beam: {"wer": 29.5, "per": 7.25})
    summary = seq2seq.run_seq2seq_experiment("g2p", paths, runs=["rnn, global concat, 60 min"])
    recorded = json.loads(summary_path.read_text())
    assert recorded["runs"]["transformer"] == other
    assert recorded["runs"]["rnn, global concat, 60 min"]["test_beam"] == {"wer": 29.5, "per": 7.25}
    assert recorded == summary


def test_an_ensemble_row_brings_its_members_decodes_them_together_and_is_reused(tmp_path, monkeypatch):
    from attnkit.data import seq2seq as seq2seq_data
    from attnkit.experiments.seq2seq import run as seq2seq
    from attnkit.tasks.seq2seq import inference as seq2seq_inference
    from attnkit.tasks.seq2seq.config import Seq2SeqConfig

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    name, members = next(iter(seq2seq.EXPERIMENTS["g2p"].ensembles.items()))
    trained, loaded, decoded = [], [], []

    def fake_ensure_run(argv, out, threads=None, processes=1, device="auto"):
        trained.append(out.name)
        minutes = 50 + len(trained)
        return {"test": {"wer": 30.0, "per": 7.0}, "best_valid": {"wer": 29.0}, "best_epoch": 9, "epochs_run": 9 + len(trained),
                "train_seconds": 60 * minutes, "num_parameters": 1000}  # fmt: skip

    class FakeDataSet:
        def split(self, split):
            return [(split, "x")]

        def references_for(self, split):
            return [["x"]]

    def fake_evaluate(loaded_model, pairs, references, *, beam_size=1):
        decoded.append((pairs[0][0], beam_size))
        return {"wer": 20.0 + beam_size, "per": 5.0}

    def fake_load(checkpoints):
        loaded.append(checkpoints)
        return seq2seq_inference.LoadedSeq2Seq(None, None, None, Seq2SeqConfig({}, data="cmudict"))

    monkeypatch.setattr(seq2seq, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(seq2seq, "_beam_test", lambda out, beam: {"wer": 29.5, "per": 7.25})
    monkeypatch.setattr(seq2seq_inference, "load_seq2seq_ensemble", fake_load)
    monkeypatch.setattr(seq2seq_inference, "evaluate_seq2seq", fake_evaluate)
    monkeypatch.setattr(seq2seq_data, "load_data_set", lambda data: FakeDataSet())
    summary = seq2seq.run_seq2seq_experiment("g2p", paths, runs=[name])
    assert trained == [seq2seq.slug(member) for member in members]  # the members first
    assert loaded == [[str(paths.runs / "g2p" / seq2seq.slug(member) / "best") for member in members]]
    assert sorted(decoded) == [("test", 1), ("test", 5), ("valid", 1)]
    row = summary["runs"][name]
    assert row["test"]["wer"] == 21.0 and row["test_beam"]["wer"] == 25.0 and row["best_valid"]["wer"] == 21.0
    assert row["minutes"] == 52 and row["epochs_run"] == "10 + 11" and row["num_parameters"] == 2000
    assert row["command"].startswith("attnkit evaluate --checkpoint ") and row["command_beam"].endswith("--beam 5")
    assert row["members"] == {member: summary["runs"][member]["command"] for member in members}
    seq2seq.run_seq2seq_experiment("g2p", paths, runs=[name])
    assert len(loaded) == 1  # the members did not change: the row is reused
    assert (
        f"| {name} | 21.00 | 5.00 | 25.00 / 5.00 (k=5) | 21.00 | 52.0 | 10 + 11 |" in render_results(paths).read_text()
    )
    with pytest.raises(ValueError, match=r"its runs: .*ensemble: "):
        seq2seq.run_seq2seq_experiment("g2p", paths, runs=["nope"])


def test_the_g2p_peer_row_is_trained_once_recorded_and_rendered(tmp_path, monkeypatch):
    from attnkit.data import seq2seq as seq2seq_data
    from attnkit.experiments.seq2seq import run as seq2seq
    from attnkit.tasks.seq2seq import phonetisaurus

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    calls = []

    def fake_baseline(task, workdir, order=8):
        calls.append((task, Path(workdir).name, order))
        return {"wer": 25.79, "per": 6.18, "order": order, "version": "0.3.0", "train_cpu_seconds": 204.5}

    monkeypatch.setattr(seq2seq_data, "load_data_set", lambda name: name)
    monkeypatch.setattr(phonetisaurus, "phonetisaurus_baseline", fake_baseline)
    monkeypatch.setattr(phonetisaurus, "phonetisaurus_version", lambda: "0.3.0")
    summary = seq2seq.run_seq2seq_experiment("g2p", paths, runs=["phonetisaurus"])
    assert calls == [("cmudict", "phonetisaurus", 8)]
    assert summary["peer"]["command"] == "attnkit experiment g2p --only phonetisaurus"
    seq2seq.run_seq2seq_experiment("g2p", paths, runs=["phonetisaurus"])  # same version and order: reused
    assert len(calls) == 1
    monkeypatch.setattr(phonetisaurus, "phonetisaurus_version", lambda: "0.4.0")
    seq2seq.run_seq2seq_experiment("g2p", paths, runs=["phonetisaurus"])  # another version: trained again
    assert len(calls) == 2
    page = (paths.docs / "results.md").read_text()
    assert "| **peer:** Phonetisaurus 0.3.0 (order-8 joint n-gram WFST, same split and scorer) | 25.79 | 6.18 |" in page


def test_classification_scores_the_seeds_as_an_ensemble_row_with_their_summed_minutes(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from attnkit.data import classification as classification_data
    from attnkit.tasks.classify import inference

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    loaded = []

    def fake_ensure_run(argv, out, threads=None, device="auto"):
        seed = int(argv[argv.index("--seed") + 1])
        return {"test": {"accuracy": 0.9 + seed / 100}, "best_valid": {"accuracy": 0.9}, "best_epoch": 2,
                "train_seconds": 60 * (seed + 1)}  # fmt: skip

    class Member:
        # seed0 says "a" for everything, seed1 says "b" weakly, seed2 "b" weakly: the mean says "a" (0.6 vs 0.4)
        def __init__(self, path):
            self.label_names = ["a", "b"]
            self.sure = path.name == "seed0"
            loaded.append(path.name)

        def probabilities(self, texts, *, batch_size=64):
            import torch

            return torch.tensor([[1.0, 0.0] if self.sure else [0.4, 0.6]] * len(texts))

        def label_ids(self, labels):
            return [self.label_names.index(label) for label in labels]

    data = SimpleNamespace(test_texts=["x", "y", "z", "w"], test_labels=[0, 0, 0, 1], label_names=["a", "b"])
    monkeypatch.setattr(classification, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(classification_data, "load_data_set", lambda name: data)
    monkeypatch.setattr(inference, "load_classifier", lambda path, device="auto": Member(path))
    monkeypatch.setattr(classification, "_baseline", lambda name: {"test_accuracy": 70.0, "minutes": 0.1})
    table = classification.run_classification(["r8"], 3, paths)
    assert loaded == ["seed0", "seed1", "seed2"]
    ensemble = table["r8"]["ensemble"]
    assert ensemble["members"] == 3 and ensemble["test_accuracy"] == 75.0 and ensemble["training_minutes"] == 6.0
    assert ensemble["command"].endswith("r8/seed1 runs/experiments/classification/r8/seed2 --data r8")
    assert "| r8 | ensemble of the 3 seeds: 75.00 | 70.00 | yes |" in (paths.docs / "results.md").read_text()
    assert "ensemble" not in classification.run_classification(["r8"], 1, paths)["r8"]  # one seed: no ensemble


def test_masking_trains_the_models_asked_for_and_keeps_the_others_rows(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from attnkit.data import classification as classification_data

    paths = ExperimentPaths(runs=tmp_path / "runs", docs=tmp_path / "docs")
    trained = []

    def fake_ensure_run(argv, out, threads=None, device="auto"):
        trained.append(argv[argv.index("--model") + 1])
        return {"test": {"accuracy": 0.8}, "best_epoch": 4, "train_seconds": 60}

    def fake_statistics(checkpoint, texts, labels, *, seed=0):
        return {
            "test_accuracy": 79.0 + seed,
            "padding_mass": 0.1 * ("unmasked" in str(checkpoint)),
            "padding_share": 0.5,
        }

    monkeypatch.setattr(masking, "ensure_run", fake_ensure_run)
    monkeypatch.setattr(masking, "padding_statistics", fake_statistics)
    monkeypatch.setattr(
        classification_data, "load_data_set", lambda data: SimpleNamespace(test_texts=[], test_labels=[])
    )
    masking.run_masking("fine-foods", 2, paths, models=("pooled",))
    assert trained == ["pooled"] * 6  # 3 modes x 2 seeds
    masking.run_masking("fine-foods", 1, paths, models=("han",))
    summary = json.loads((paths.results / "masking.json").read_text())
    assert list(summary["models"]) == ["pooled", "han"]  # the pooled rows survived the han-only run
    pooled = summary["models"]["pooled"]
    assert pooled["seeds"] == 2 and pooled["modes"]["unmasked"]["padding_mass_mean"] == 0.1
    assert pooled["modes"]["masked"]["test_accuracy_mean"] == 79.5 and pooled["modes"]["masked"]["best_epoch_mean"] == 4
    page = (paths.docs / "results.md").read_text()
    assert "pooled: 2 seeds, han: 1 seed per model and variant" in page
    with pytest.raises(ValueError, match="no masking model cnn"):
        masking.run_masking("fine-foods", 1, paths, models=("cnn",))


def test_every_experiment_of_the_registry_is_a_sub_command_with_its_own_options(capsys):
    from attnkit.experiments.registry import EXPERIMENTS
    from attnkit.experiments.seq2seq.settings import EXPERIMENTS as SEQ2SEQ

    assert list(EXPERIMENTS) == [
        "classification",
        "masking",
        "faithfulness",
        "faithful-attention",
        *SEQ2SEQ,
        "deploy",
        "report",
    ]
    with pytest.raises(SystemExit):
        main(["experiment", "--help"])
    listing = capsys.readouterr().out
    assert all(f"    {name} " in listing or f"    {name}\n" in listing for name in EXPERIMENTS)
    own = {"masking": ["--seeds", "--only"], "faithfulness": ["--documents"], "deploy": ["--checkpoint", "--rounds"]}
    for name, options in own.items():
        with pytest.raises(SystemExit):
            main(["experiment", name, "--help"])
        page = capsys.readouterr().out
        assert all(option in page for option in options) and "--docs DOCS" in page, name
    with pytest.raises(SystemExit):
        main(["experiment", "g2p", "--help"])
    assert "--seeds" not in capsys.readouterr().out
