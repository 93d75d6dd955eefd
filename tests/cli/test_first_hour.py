"""A new user's first hour, through the real command line (subprocess): every mistake a user can make is one
``attnkit: error:`` line naming the file, line, path or field, exit status 2, no traceback, and nothing written or
replaced; and what a user expects is there (the whole text, per-class metrics, per-epoch CSV, remembered columns)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_helpers import NEGATIVE, POSITIVE, SMALL, assert_user_error, attnkit
from attnkit.cli import main


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``directory`` with its size and modification time (to prove nothing changed)."""
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*")}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished tiny classifier run on a CSV whose columns are `review` and `stars`."""
    root = tmp_path_factory.mktemp("first_hour")
    rows = [(t, "pos") for t in POSITIVE] * 6 + [(t, "neg") for t in NEGATIVE] * 6
    lines = ["review,stars"] + [f'"{text}",{label}' for text, label in rows]
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    out = root / "run"
    argv = ["train", "classify", "--data", str(root / "train.csv"), "--text-column", "review"]
    argv += ["--label-column", "stars", *SMALL, "--epochs", "6", "--lr", "0.05", "--batch-size", "4", "--out", str(out)]
    assert main(argv) == 0
    return root, out


def test_a_finished_run_is_not_replaced_without_resume_or_overwrite(run):
    root, out = run
    before = snapshot(out)
    argv = ["train", "classify", "--data", str(root / "train.csv"), "--text-column", "review", "--label-column"]
    result = attnkit(*argv, "stars", *SMALL, "--epochs", "1", "--out", str(out))
    assert_user_error(result, str(out), "already holds a run", "--resume", "--overwrite")
    assert snapshot(out) == before


def test_arguments_are_checked_before_anything_is_written(run):
    root, out = run
    before = snapshot(out)
    result = attnkit("train", "classify", "--data", str(root / "train.csv"), "--batch-size", "0", "--out", str(out))
    assert_user_error(result, "--batch-size", "must be >= 1")
    result = attnkit("train", "classify", "--data", "fine-foods", "--epochs", "0", "--out", str(root / "fresh"))
    assert_user_error(result, "--epochs", "must be >= 1")
    assert snapshot(out) == before and not (root / "fresh").exists()


def test_out_under_a_file_or_unwritable_is_one_line(run, tmp_path):
    root, _ = run
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    result = attnkit("train", "classify", "--data", str(root / "train.csv"), *SMALL, "--out", str(blocker / "run"))
    assert_user_error(result, str(blocker), "is a file")
    result = attnkit("train", "classify", "--data", str(root / "train.csv"), "--text-column", "review",
                     "--label-column", "stars", *SMALL, "--epochs", "1", "--out", "/sys/attnkit-run")  # fmt: skip
    assert_user_error(result, "/sys/attnkit-run")


def test_explain_out_a_directory_and_predict_file_a_directory(run, tmp_path):
    _, out = run
    result = attnkit("explain", "--checkpoint", str(out), "--text", "great tea", "--out", str(tmp_path))
    assert_user_error(result, str(tmp_path), "is a directory")
    result = attnkit("predict", "--checkpoint", str(out), "--file", str(tmp_path))
    assert_user_error(result, str(tmp_path), "is a directory")


def test_a_closed_pipe_ends_predict_quietly(run, tmp_path):
    _, out = run
    many = tmp_path / "many.txt"
    many.write_text("great tea\n" * 20000)
    command = f"{sys.executable} -m attnkit.cli predict --checkpoint {out} --file {many} | head -n 1"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    assert result.stdout.count("\n") == 1 and result.stderr == ""


def test_a_config_with_a_wrongly_typed_field_is_one_line(run, tmp_path):
    import shutil

    _, out = run
    broken = tmp_path / "broken"
    shutil.copytree(out / "best", broken)
    config = json.loads((broken / "config.json").read_text())
    config["embed_dim"] = "16"
    (broken / "config.json").write_text(json.dumps(config))
    for command in (["predict", "--text", "tea"], ["explain", "--text", "tea", "--out", str(tmp_path / "r.html")]):
        assert_user_error(attnkit(command[0], "--checkpoint", str(broken), *command[1:]), "embed_dim", "'16'")


def test_empty_text_and_invalid_utf8_are_refused_naming_the_line(run, tmp_path):
    _, out = run
    assert_user_error(attnkit("predict", "--checkpoint", str(out), "--text", ""), "--text number 1 is empty")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"great tea\nawful \xff coffee\n")
    assert_user_error(attnkit("predict", "--checkpoint", str(out), "--file", str(bad)), f"{bad}:2", "UTF-8")


def test_predict_takes_a_run_directory_and_prints_the_whole_text(run):
    _, out = run
    long = "great taste and lovely smell " * 8
    result = attnkit("predict", "--checkpoint", str(out), "--text", long)
    assert result.returncode == 0, result.stderr
    label, confidence, text = result.stdout.rstrip("\n").split("\t")
    assert label == "pos" and text == long and 0.5 < float(confidence) <= 1


def test_evaluate_remembers_the_columns_and_reports_per_class(run):
    root, out = run
    result = attnkit("evaluate", "--checkpoint", str(out), "--data", str(root / "train.csv"))
    assert result.returncode == 0, result.stderr
    assert "accuracy 100.00% on 36 documents" in result.stdout
    assert "precision" in result.stdout and "confusion matrix" in result.stdout
    result = attnkit("evaluate", "--checkpoint", str(out), "--data", str(root / "train.csv"), "--json")
    report = json.loads(result.stdout)
    assert report["per_class"]["pos"] == {"precision": 100.0, "recall": 100.0, "f1": 100.0, "support": 18}
    assert report["confusion"] == [[18, 0], [0, 18]] and report["labels"] == ["neg", "pos"]


def test_every_run_writes_its_epochs_as_csv(run):
    _, out = run
    rows = (out / "metrics.csv").read_text().splitlines()
    assert rows[0].split(",")[:5] == ["epoch", "train_loss", "seconds", "steps", "partial"]
    assert "valid_accuracy" in rows[0] and len(rows) == 1 + json.loads((out / "metrics.json").read_text())["epochs_run"]


def test_overwrite_replaces_a_finished_run(run, tmp_path):
    import shutil

    root, out = run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "best" / "stale.txt").write_text("from the old run")
    argv = ["train", "classify", "--data", str(root / "train.csv"), "--text-column", "review", "--label-column"]
    assert main([*argv, "stars", *SMALL, "--epochs", "1", "--out", str(copy), "--overwrite"]) == 0
    assert not (copy / "best" / "stale.txt").exists()
    assert json.loads((copy / "metrics.json").read_text())["epochs_run"] == 1


def test_user_files_are_read_as_written(run, tmp_path):
    """JSONL strings may hold U+2028 / NEL; TSV is read verbatim (an unclosed quote is text); one label is refused."""
    _, out = run
    jsonl = tmp_path / "docs.jsonl"
    rows = [{"review": f"great\u2028tea {i}", "stars": "pos"} for i in range(3)]
    rows += [{"review": f"awful\x85coffee {i}", "stars": "neg"} for i in range(3)]
    jsonl.write_text("\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n")
    result = attnkit("evaluate", "--checkpoint", str(out), "--data", str(jsonl))
    assert result.returncode == 0, result.stderr
    assert "on 6 documents" in result.stdout
    tsv = tmp_path / "docs.tsv"
    tsv.write_text("review\tstars\n" + '"great tea\tpos\n' + "".join(f"awful coffee {i}\tneg\n" for i in range(79)))
    result = attnkit("evaluate", "--checkpoint", str(out), "--data", str(tsv))
    assert result.returncode == 0, result.stderr
    assert "on 80 documents" in result.stdout
    single = tmp_path / "single.csv"
    single.write_text("review,stars\n" + "".join(f"tea {i},pos\n" for i in range(10)))
    result = attnkit("train", "classify", "--data", str(single), "--text-column", "review", "--label-column", "stars",
                     *SMALL, "--out", str(tmp_path / "single-run"))  # fmt: skip
    assert_user_error(result, str(single), "'pos'", "at least 2 different labels")
    assert not (tmp_path / "single-run").exists()


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """A small pair file of dates (ISO -> written out) with one 5,000-character pair on line 8."""
    root = tmp_path_factory.mktemp("pairs")
    months = ["January", "February", "March", "April", "May", "June"]
    rows = [(f"2001-0{m + 1}-{d:02d}", f"{d} {months[m]} 2001") for m in range(6) for d in range(1, 11)]
    lines = [f"{source}\t{target}" for source, target in rows]
    lines.insert(7, "x" * 5000 + "\tlong")
    (root / "pairs.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_long_pairs_are_skipped_with_a_count_or_refused_under_strict(pairs):
    common = ["train", "seq2seq", "--data", str(pairs / "pairs.tsv"), "--model", "rnn", "--embed-dim", "8"]
    common += ["--hidden", "16", "--epochs", "1", "--no-progress", "--no-test"]
    result = attnkit(*common, "--out", str(pairs / "run"))
    assert result.returncode == 0, result.stderr
    assert "skipped 1 pair longer than 256 source / 256 target tokens (train 1)" in result.stdout
    strict = attnkit(*common, "--strict", "--out", str(pairs / "strict"))
    assert_user_error(strict, f"{pairs / 'pairs.tsv'}:8", "5000 tokens", "limit of 256")
    assert not (pairs / "strict").exists()
    # translate: one output line per input line, even when a line holds U+2028
    lines = "2001-03-04\n2001-05\u202806\n2001-01-02\n"
    result = attnkit("translate", "--checkpoint", str(pairs / "run"), stdin=lines)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 3


def test_translate_json_decodes_exactly_as_translate(pairs):
    texts = ["--text", "2001-03-04", "--text", "2001-06-10", "--text", "2001-01-01"]
    plain = attnkit("translate", "--checkpoint", str(pairs / "run"), "--beam", "3", *texts)
    as_json = attnkit("translate", "--checkpoint", str(pairs / "run"), "--beam", "3", "--json", *texts)
    assert plain.returncode == 0 and as_json.returncode == 0, plain.stderr + as_json.stderr
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [record["translation"] for record in records] == plain.stdout.splitlines()
    for record in records:  # one attention row per decoded token, each a distribution over the source tokens
        assert len(record["attention"]) == len(record["target_tokens"])
        assert all(abs(sum(row) - 1) < 1e-3 and len(row) == len(record["source_tokens"]) for row in record["attention"])


def test_epoch_lines_people_read_and_tensorboard(run, tmp_path):
    root, _ = run
    small = [option for option in SMALL if option != "--no-progress"]
    result = attnkit("train", "classify", "--data", str(root / "train.csv"), "--text-column", "review",
                     "--label-column", "stars", *small, "--epochs", "2", "--tensorboard", "--out", str(tmp_path / "tb"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    epoch_lines = [line for line in result.stderr.splitlines() if line.startswith("epoch ")]
    assert len(epoch_lines) == 2 and all("valid accuracy" in line and "%" in line for line in epoch_lines)
    assert "count" not in result.stderr and "{" not in result.stderr
    assert sum("stopped" in line for line in (result.stdout + result.stderr).splitlines()) == 1
    assert list((tmp_path / "tb" / "tensorboard").glob("events.out.tfevents.*"))
