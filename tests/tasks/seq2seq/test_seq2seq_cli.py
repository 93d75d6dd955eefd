"""``attnkit train seq2seq``, ``evaluate`` and ``translate`` end to end on a small pairs file (lower -> upper case,
character level): the checkpoint layout, test-split scores, translation from an argument, a file and stdin
(greedy and beam), ensembles of checkpoints, ``--resume``, one-line file:line errors, and ``--help``."""

import json
import random
import shutil
import subprocess
import sys

import pytest
import torch

from attnkit.checkpointing import read_config, read_trainer_state
from attnkit.cli import main
from attnkit.data.seq2seq.vocab import SPECIALS, Vocab

# a small LSTM that learns the task in a few seconds on one thread (valid WER ~0 after 5 epochs)
MODEL = [
    "--model", "rnn", "--cell", "lstm", "--attention", "luong-general", "--embed-dim", "16", "--hidden", "48",
    "--dropout", "0", "--batch-size", "16", "--lr", "0.01", "--threads", "1", "--no-progress",
]  # fmt: skip


@pytest.fixture(autouse=True)
def restore_threads():
    """``--threads 1`` sets torch's global thread count: give the other tests theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def write_pairs(path, words, header=True):
    lines = (["source\ttarget"] if header else []) + [f"{w}\t{w.upper()}" for w in words]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """900 distinct words of 3-6 letters a-h: 800 train, 50 valid, 50 test."""
    root = tmp_path_factory.mktemp("seq2seq_cli")
    rng = random.Random(0)
    words: set[str] = set()
    while len(words) < 900:
        words.add("".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 6))))
    ordered = sorted(words)
    rng.shuffle(ordered)
    return {
        "root": root,
        "train": write_pairs(root / "train.tsv", ordered[:800]),
        "valid": write_pairs(root / "valid.tsv", ordered[800:850], header=False),
        "test": write_pairs(root / "test.tsv", ordered[850:]),
        "test_words": ordered[850:],
    }


def data_args(files):
    return ["--data", str(files["train"]), "--valid", str(files["valid"]), "--test", str(files["test"])]


@pytest.fixture(scope="module")
def trained(files):
    out = files["root"] / "run"
    threads = torch.get_num_threads()
    status = main(
        ["train", "seq2seq", *data_args(files), *MODEL, "--epochs", "5", "--patience", "5", "--out", str(out)]
    )
    torch.set_num_threads(threads)
    assert status == 0
    return out


def test_training_writes_safetensors_checkpoints_with_config_and_tokenizers(trained):
    best = trained / "best"
    assert {"model.safetensors", "config.json", "source_tokenizer.json", "target_tokenizer.json"} <= {
        p.name for p in best.iterdir()
    }
    assert not [p for p in trained.rglob("*") if p.suffix in (".pt", ".pth", ".pkl", ".bin")]
    config = read_config(best)
    assert config["kind"] == "seq2seq" and config["metrics"] == "sequence"
    assert config["model"]["model"] == "rnn" and config["model"]["cell"] == "lstm"
    metrics = json.loads((trained / "metrics.json").read_text())
    assert metrics["epochs_run"] == 5 and metrics["details"]["sizes"] == {"train": 800, "valid": 50, "test": 50}
    # selection on the validation split, by lowest WER; the task was learnt
    history = read_trainer_state(trained / "last")["history"]
    assert metrics["best_valid"]["wer"] == min(record["metrics"]["wer"] for record in history)
    assert metrics["best_valid"]["wer"] <= 20.0 and metrics["test"]["wer"] <= 30.0


def test_evaluate_scores_the_test_file_greedy_and_with_a_beam(trained, files, capsys):
    args = ["evaluate", "--checkpoint", str(trained), "--data", str(files["test"]), "--threads", "1"]
    assert main(args) == 0
    greedy = capsys.readouterr().out
    assert greedy.startswith("WER ") and "PER " in greedy and "on 50 examples" in greedy and "(greedy" in greedy
    test_wer = json.loads((trained / "metrics.json").read_text())["test"]["wer"]
    assert f"WER {test_wer:.2f}%" in greedy  # the same file, the same model: the figure training reported
    assert main([*args, "--beam", "3"]) == 0
    assert "(beam 3" in capsys.readouterr().out


def test_translate_from_arguments_file_and_json(trained, files, capsys):
    words = files["test_words"][:6]
    texts = [part for word in words for part in ("--text", word)]
    assert main(["translate", "--checkpoint", str(trained), "--threads", "1", *texts]) == 0
    outputs = capsys.readouterr().out.splitlines()
    assert len(outputs) == 6 and sum(o == w.upper() for o, w in zip(outputs, words, strict=True)) >= 4
    listing = files["root"] / "words.txt"
    listing.write_text(f"{words[0]}\n\n{words[1]}\n", encoding="utf-8")
    assert main(["translate", "--checkpoint", str(trained / "best"), "--file", str(listing), "--beam", "3"]) == 0
    beam_lines = capsys.readouterr().out.split("\n")
    assert beam_lines[1] == "" and len(beam_lines) == 4  # a blank input line stays a blank output line
    assert main(["translate", "--checkpoint", str(trained), "--text", "abc", "--json", "--beam", "3"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["source"] == "abc" and record["source_tokens"] == ["a", "b", "c"]
    assert len(record["attention"]) == len(record["target_tokens"])  # one row per generated token (with <eos>)
    assert all(len(row) == 3 and abs(sum(row) - 1) < 1e-3 for row in record["attention"])


def test_an_ensemble_of_checkpoints_evaluates_and_translates_and_refuses_another_vocabulary(
    trained, files, tmp_path, capsys
):
    args = ["evaluate", "--data", str(files["test"]), "--threads", "1", "--checkpoint"]
    assert main([*args, str(trained)]) == 0
    alone = capsys.readouterr().out
    assert main([*args, str(trained), str(trained / "best")]) == 0  # a model twice: the mean is the model
    assert capsys.readouterr().out.split(" (")[0] == alone.split(" (")[0]  # the same WER and PER
    assert main(["translate", "--checkpoint", str(trained), str(trained), "--text", "abc", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["translation"] == "ABC" and "attention" not in record  # an ensemble has no single attention
    other = tmp_path / "other"
    shutil.copytree(trained / "best", other)
    vocab = Vocab.load(other / "target_tokenizer.json")
    Vocab(vocab.symbols[len(SPECIALS) :][::-1], level="char").save(other / "target_tokenizer.json")  # reordered
    assert main([*args, str(trained), str(other)]) == 2
    assert "target tokenizers differ" in capsys.readouterr().err


def test_translate_reads_stdin(trained):
    result = subprocess.run(
        [sys.executable, "-m", "attnkit.cli", "translate", "--checkpoint", str(trained), "--threads", "1"],
        input="abc\nhead\n",
        capture_output=True,
        text=True,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(line.isupper() or line == "" for line in lines), lines


def test_resume_continues_the_run(files, tmp_path, capsys):
    out = tmp_path / "run"
    base = ["train", "seq2seq", *data_args(files), *MODEL, "--limit", "200", "--patience", "9", "--out", str(out)]
    assert main([*base, "--epochs", "2"]) == 0
    assert read_trainer_state(out / "last")["epoch"] == 2
    first_two = read_trainer_state(out / "last")["history"]
    first_seconds = json.loads((out / "metrics.json").read_text())["train_seconds"]
    assert main([*base, "--epochs", "3", "--resume"]) == 0
    state = read_trainer_state(out / "last")
    assert state["epoch"] == 3 and state["history"][:2] == first_two  # epochs 1-2 kept, epoch 3 trained on top
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs_run"] == 3
    # the training time counts the whole run: the first two epochs' time, then the third's
    assert metrics["train_seconds"] >= first_seconds + state["history"][2]["seconds"] - 0.2
    capsys.readouterr()
    # a resumed run must keep the settings that change the numbers
    assert main([*base, "--epochs", "4", "--resume", "--lr", "0.5"]) == 2
    assert "was started differently (lr: 0.01 then, 0.5 now)" in capsys.readouterr().err


def test_a_bad_pairs_file_is_one_line_with_file_and_line_and_nothing_is_written(tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("source\ttarget\nabc\tABC\nabd\n", encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "seq2seq", "--data", str(bad), *MODEL, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnkit: error: ") and f"{bad}:3" in err and "\n" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "transformer", "--attention", "bahdanau"], "--attention: option(s) of --model rnn"),
        (["--model", "rnn", "--heads", "4"], "--heads: option(s) of --model transformer"),
        (["--data", "no-such-task"], "neither a built-in"),
        (["--data", "dates", "--valid", "x.tsv"], "--valid x.tsv: no such file"),
        (["--model", "transformer", "--dim", "30", "--heads", "4"], "dim=30 is not divisible by heads=4"),
    ],
)
def test_option_errors_are_one_clear_line(args, message, files, tmp_path, capsys):
    command = ["train", "seq2seq", *data_args(files)[:2], "--out", str(tmp_path / "run"), "--no-progress", *args]
    if "--data" in args:
        command = ["train", "seq2seq", "--out", str(tmp_path / "run"), "--no-progress", *args]
    assert main(command) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "run").exists()


def test_translate_and_evaluate_refuse_what_they_cannot_use(trained, tmp_path, capsys):
    (tmp_path / "model.pt").write_bytes(b"not a checkpoint")
    assert main(["translate", "--checkpoint", str(tmp_path), "--text", "abc"]) == 2
    assert main(["evaluate", "--checkpoint", str(trained)]) == 2  # trained on a file: say which pairs to score
    assert "--data FILE" in capsys.readouterr().err
    assert main(["translate", "--checkpoint", str(trained), "--text", "abc", "--beam", "0"]) == 2


@pytest.mark.parametrize("command", [["train", "seq2seq"], ["translate"], ["evaluate"]])
def test_help_has_examples(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    assert "examples:" in capsys.readouterr().out


def test_the_cli_lists_every_attention_the_model_knows():
    from attnkit.models.rnn_seq2seq import ATTENTIONS as MODEL_ATTENTIONS
    from attnkit.tasks.seq2seq.commands import ATTENTIONS

    assert ATTENTIONS == MODEL_ATTENTIONS
