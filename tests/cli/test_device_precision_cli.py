"""``--device`` and ``--precision`` through the command line: every command that runs a model has them, a run
records them in ``metrics.json``, bf16 runs end to end (``train classify``, ``evaluate``, ``predict``, ``translate``)
with results close to fp32's, and a device this machine does not have is one ``attnkit: error:`` line (exit 2) with
nothing written. CUDA variants skip here, with the reason."""

from __future__ import annotations

import json
import random
from contextlib import contextmanager

import pytest
import torch

from attnkit.cli import main

CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA not available: torch.cuda.is_available() is False"
)
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")
POSITIVE = ["great taste and lovely smell", "really great coffee , will buy again", "lovely tea , great price"]
NEGATIVE = ["awful taste and stale smell", "really awful coffee , never again", "stale tea , awful price"]
CLASSIFY = ["--model", "han", "--embed-dim", "8", "--hidden", "8", "--vocab-size", "100", "--no-progress"]
CLASSIFY += ["--epochs", "4", "--lr", "0.05", "--batch-size", "4"]
SEQ2SEQ = [
    "--model", "rnn", "--cell", "lstm", "--attention", "luong-general", "--embed-dim", "16", "--hidden", "48",
    "--dropout", "0", "--batch-size", "16", "--lr", "0.01", "--epochs", "4", "--no-progress",
]  # fmt: skip


@contextmanager
def forward_calls():
    """Record every module forward run inside the block: (module type, the CPU autocast dtype or None).

    What a precision or a quantisation *did* is read here, not from its figures: two kernels may round to the same
    loss on one CPU and not on another."""
    seen: list[tuple[type, torch.dtype | None]] = []

    def record(module, args, output):
        dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None
        seen.append((type(module), dtype))

    handle = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        yield seen
    finally:
        handle.remove()


def quantized_linears(seen: list[tuple[type, torch.dtype | None]]) -> int:
    """How many recorded forwards ran torch's dynamically quantised int8 linear layer."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicInt8Linear

    return sum(issubclass(kind, DynamicInt8Linear) for kind, _ in seen)


@pytest.fixture(autouse=True)
def keep_threads():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def classify_run(tmp_path_factory):
    """A HAN trained in bf16 on the CPU, on a CSV of reviews."""
    root = tmp_path_factory.mktemp("device_precision")
    rows = [(text, "pos") for text in POSITIVE] * 6 + [(text, "neg") for text in NEGATIVE] * 6
    (root / "train.csv").write_text("text,label\n" + "".join(f'"{text}",{label}\n' for text, label in rows))
    out = root / "run"
    argv = ["train", "classify", "--data", str(root / "train.csv"), *CLASSIFY, "--out", str(out)]
    assert main([*argv, "--precision", "bf16", "--device", "cpu", "--threads", "1"]) == 0
    return root, out


@pytest.fixture(scope="module")
def seq2seq_run(tmp_path_factory):
    """An LSTM trained (fp32) to upper-case words of 3-6 letters, and its test words."""
    root = tmp_path_factory.mktemp("device_precision_seq2seq")
    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 6))) for _ in range(700)})
    rng.shuffle(words)
    for name, part in (("train", words[:500]), ("valid", words[500:530]), ("test", words[530:560])):
        (root / f"{name}.tsv").write_text("source\ttarget\n" + "".join(f"{w}\t{w.upper()}\n" for w in part))
    out = root / "run"
    data = ["--data", str(root / "train.tsv"), "--valid", str(root / "valid.tsv"), "--test", str(root / "test.tsv")]
    assert main(["train", "seq2seq", *data, *SEQ2SEQ, "--out", str(out), "--threads", "1"]) == 0
    return root, out, words[530:560]


def texts(values: list[str]) -> list[str]:
    """``--text A --text B ...``"""
    return [part for value in values for part in ("--text", value)]


def json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_bf16_run_records_its_device_and_precision(classify_run):
    _, out = classify_run
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["device"] == "cpu" and metrics["precision"] == "bf16"
    assert metrics["test"] is None and 0.0 <= metrics["best_valid"]["accuracy"] <= 100.0
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + metrics["epochs_run"]


def test_evaluate_and_predict_in_bf16_are_close_to_fp32(classify_run, capsys):
    root, out = classify_run
    results = {}
    for precision in ("fp32", "bf16"):
        capsys.readouterr()
        argv = ["evaluate", "--checkpoint", str(out), "--data", str(root / "train.csv"), "--json"]
        with forward_calls() as seen:
            assert main([*argv, "--precision", precision, "--device", "auto"]) == 0
        dtypes = {dtype for _, dtype in seen}
        assert dtypes == ({torch.bfloat16} if precision == "bf16" else {None})  # autocast acted, and only in bf16
        evaluation = json.loads(capsys.readouterr().out)
        argv = ["predict", "--checkpoint", str(out), "--json", *texts(POSITIVE + NEGATIVE)]
        assert main([*argv, "--precision", precision]) == 0
        results[precision] = evaluation, json_lines(capsys.readouterr().out)
    (evaluation32, predictions32), (evaluation16, predictions16) = results["fp32"], results["bf16"]
    assert evaluation16["count"] == evaluation32["count"] == 36
    assert evaluation16["loss"] == pytest.approx(evaluation32["loss"], abs=0.02)
    for got, want in zip(predictions16, predictions32, strict=True):
        assert got["text"] == want["text"]
        for label, probability in want["probabilities"].items():
            assert got["probabilities"][label] == pytest.approx(probability, abs=0.02)
        for got_row, want_row in zip(got["word_weights"], want["word_weights"], strict=True):
            assert got_row == pytest.approx(want_row, abs=0.02)


def test_translate_and_evaluate_in_bf16_are_close_to_fp32(seq2seq_run, capsys):
    root, out, test_words = seq2seq_run
    assert json.loads((out / "metrics.json").read_text())["precision"] == "fp32"
    results = {}
    for precision in ("fp32", "bf16"):
        capsys.readouterr()
        argv = ["translate", "--checkpoint", str(out), *texts(test_words), "--json"]
        assert main([*argv, "--precision", precision]) == 0
        translations = json_lines(capsys.readouterr().out)
        argv = ["evaluate", "--checkpoint", str(out), "--data", str(root / "test.tsv"), "--json"]
        assert main([*argv, "--precision", precision]) == 0
        results[precision] = translations, json.loads(capsys.readouterr().out)
    (translations32, metrics32), (translations16, metrics16) = results["fp32"], results["bf16"]
    assert metrics32["wer"] <= 40.0  # it learned the task (16.7 measured): a comparison that means something
    assert [t["source"] for t in translations16] == test_words
    same = [got["translation"] == want["translation"] for got, want in zip(translations16, translations32, strict=True)]
    assert sum(same) >= 0.9 * len(same)  # measured: all 30 the same, scores within 0.009, loss within 0.001
    scores = [
        (got["score"], want["score"]) for got, want, s in zip(translations16, translations32, same, strict=True) if s
    ]
    assert all(got == pytest.approx(want, abs=0.05) for got, want in scores)
    assert metrics16["count"] == metrics32["count"] == len(test_words)
    assert metrics16["wer"] == pytest.approx(metrics32["wer"], abs=10.0)
    assert metrics16["loss"] == pytest.approx(metrics32["loss"], abs=0.02)


@NO_CUDA
@pytest.mark.parametrize("command", ["train", "evaluate", "predict", "translate", "explain"])
def test_cuda_is_refused_in_one_line_and_nothing_is_written(command, classify_run, seq2seq_run, tmp_path, capsys):
    root, classifier = classify_run
    _, translator, _ = seq2seq_run
    argv = {
        "train": ["train", "classify", "--data", str(root / "train.csv"), *CLASSIFY, "--out", str(tmp_path / "new")],
        "evaluate": ["evaluate", "--checkpoint", str(classifier), "--data", str(root / "train.csv")],
        "predict": ["predict", "--checkpoint", str(classifier), "--text", "great tea"],
        "translate": ["translate", "--checkpoint", str(translator), "--text", "abc"],
        "explain": [
            "explain",
            "--checkpoint",
            str(classifier),
            "--text",
            "great tea",
            "--out",
            str(tmp_path / "r.html"),
        ],
    }[command]
    capsys.readouterr()
    assert main([*argv, "--device", "cuda"]) == 2
    captured = capsys.readouterr()
    message = "attnkit: error: --device cuda: CUDA is not available here (torch.cuda.is_available() is False)"
    assert captured.err.strip() == message and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_every_command_that_runs_a_model_offers_device_and_precision(capsys):
    commands = [
        ["train", "classify"], ["train", "seq2seq"], ["train", "vision"], ["evaluate"], ["predict"], ["explain"],
        ["translate"], ["demo"],
    ]  # fmt: skip
    for command in commands:
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        page = capsys.readouterr().out
        assert "--device DEVICE" in page and "--precision {fp32,bf16,fp16}" in page, command
        assert "auto never picks mps" in " ".join(page.split()), command
    with pytest.raises(SystemExit):
        main(["experiment", "g2p", "--help"])
    assert "--device DEVICE" in capsys.readouterr().out


@CUDA
def test_training_on_cuda_records_the_gpu(classify_run, tmp_path):
    root, _ = classify_run
    argv = ["train", "classify", "--data", str(root / "train.csv"), *CLASSIFY, "--out", str(tmp_path / "gpu")]
    assert main([*argv, "--device", "cuda", "--precision", "bf16"]) == 0
    metrics = json.loads((tmp_path / "gpu" / "metrics.json").read_text())
    assert metrics["device"] == f"cuda:{torch.cuda.current_device()}" and metrics["precision"] == "bf16"


def test_translate_and_evaluate_with_quantize_int8_stay_close_to_fp32(seq2seq_run, capsys):
    root, out, test_words = seq2seq_run
    results = {}
    for quantize in ([], ["--quantize", "int8"]):
        capsys.readouterr()
        assert main(["translate", "--checkpoint", str(out), *texts(test_words), "--json", *quantize]) == 0
        translations = json_lines(capsys.readouterr().out)
        argv = ["evaluate", "--checkpoint", str(out), "--data", str(root / "test.tsv"), "--json", *quantize]
        with forward_calls() as seen:
            assert main(argv) == 0
        assert (quantized_linears(seen) > 0) == bool(quantize)  # the int8 layers acted, and only with --quantize
        results[bool(quantize)] = translations, json.loads(capsys.readouterr().out)
    (translations32, metrics32), (translations8, metrics8) = results[False], results[True]
    same = [got["translation"] == want["translation"] for got, want in zip(translations8, translations32, strict=True)]
    assert sum(same) >= 0.8 * len(same)
    assert metrics8["loss"] == pytest.approx(metrics32["loss"], abs=0.1)
    assert metrics8["wer"] == pytest.approx(metrics32["wer"], abs=15.0)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--precision", "bf16"], "--quantize int8 runs on the CPU in fp32"),
        (["--backend", "ctranslate2"], "--quantize is for the native backend"),
    ],
)
def test_quantize_outside_native_fp32_is_one_error_line(seq2seq_run, capsys, extra, message):
    _, out, _ = seq2seq_run
    assert main(["translate", "--checkpoint", str(out), "--text", "abc", "--quantize", "int8", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnkit: error:") and message in err and len(err.strip().splitlines()) == 1
