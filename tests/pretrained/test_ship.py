"""``python -m scripts.ship_model``: a finished run becomes a named model with its cards, its figure measured
from the shipped files; it replaces a shipped model only when the figure improves, and never goes over the caps."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import scripts.ship_model as ship_module
import torch
from safetensors import safe_open
from scripts.model_cards import improves
from scripts.ship_model import main as ship_main

import attnkit.pretrained as pretrained
from attnkit.pretrained import CARD_FILE, MODEL_CARD_FILE, read_card, shipped_names
from attnkit.tasks import load, run_training

COMMAND = "attnkit train vision --data digits --limit 40 --epochs 1"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A one-epoch vision run on 40 digits."""
    out = tmp_path_factory.mktemp("run") / "digits"
    threads = torch.get_num_threads()
    try:
        run_training("vision", [*COMMAND.split()[3:], "--out", str(out), "--no-progress", "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    return out


@pytest.fixture
def shelf(tmp_path, monkeypatch) -> Path:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    monkeypatch.setattr(pretrained, "SHELF", shelf)
    return shelf


def ship(run: Path, shelf: Path, *options: str) -> int:
    results = shelf.parent / "shipped.json"
    return ship_main(
        [
            str(run),
            "tiny",
            "--data",
            "digits",
            "--metric",
            "accuracy",
            "--command",
            COMMAND,
            "--shelf",
            str(shelf),
            "--results",
            str(results),
            *options,
        ]
    )


def test_shipping_a_run_in_float16_measures_the_shipped_files_and_writes_both_cards(tiny_run, shelf, capsys):
    assert ship(tiny_run, shelf, "--float16") == 0
    card = read_card("tiny")
    metrics = json.loads((tiny_run / "metrics.json").read_text())
    with safe_open(str(shelf / "tiny" / "model.safetensors"), framework="pt") as handle:
        dtypes = {handle.get_tensor(key).dtype for key in handle.keys()}  # noqa: SIM118
    assert torch.float16 in dtypes and torch.float32 not in dtypes
    model = load("tiny", device="cpu")  # by name, from the float16 file
    figure = model.evaluate(*_test_split())["accuracy"]  # a percentage, as every attnkit rate
    assert card["value"] == round(figure, 2)
    assert card["training_minutes"] == round(metrics["train_seconds"] / 60, 1) and card["float16"] is True
    assert card["evaluate"] == "attnkit evaluate --checkpoint tiny --data digits --json"
    assert json.loads((shelf.parent / "shipped.json").read_text())["tiny"]["value"] == card["value"]
    assert "float16" in (shelf / "tiny" / MODEL_CARD_FILE).read_text()
    assert capsys.readouterr().out.startswith(f"shipped tiny: accuracy {card['value']} on digits")


def _test_split():
    from attnkit.data.images import load_data_set

    data = load_data_set("digits")
    return data.test_images, data.test_labels


def test_a_model_is_replaced_only_when_its_figure_improves_or_when_forced(tiny_run, shelf, monkeypatch, capsys):
    figures = iter([50.0, 50.0, 40.0, 60.0])
    monkeypatch.setattr(ship_module, "measure", lambda *args, **kwargs: next(figures))
    assert ship(tiny_run, shelf) == 0
    assert ship(tiny_run, shelf) == 2  # the same figure is no improvement
    assert "already shipped with accuracy 50.0; the new accuracy 50.0 does not improve" in capsys.readouterr().err
    assert ship(tiny_run, shelf, "--replace") == 0 and read_card("tiny")["value"] == 40.0
    assert ship(tiny_run, shelf) == 0 and read_card("tiny")["value"] == 60.0
    assert shipped_names() == ["tiny"] and sorted(p.name for p in shelf.iterdir()) == ["tiny"]
    assert improves("wer", 20.0, 21.0) and not improves("wer", 21.0, 20.0) and improves("accuracy", 2.0, 1.0)


def test_the_caps_and_bad_requests_change_nothing(tiny_run, shelf, monkeypatch, capsys):
    monkeypatch.setattr(ship_module, "measure", lambda *args, **kwargs: 50.0)
    monkeypatch.setattr(ship_module, "MAX_MODEL_BYTES", 1000)
    assert ship(tiny_run, shelf) == 2
    err = capsys.readouterr().err
    assert err.startswith("ship: error: tiny: ") and "over the cap of 1,000 per model (try --float16)" in err
    monkeypatch.setattr(ship_module, "MAX_MODEL_BYTES", 2**30)
    monkeypatch.setattr(ship_module, "MAX_TOTAL_BYTES", 1000)
    assert ship(tiny_run, shelf) == 2 and "over the cap of 1,000 in all" in capsys.readouterr().err
    assert list(shelf.iterdir()) == []
    assert ship_main([str(tiny_run), "../x", "--data", "d", "--metric", "m", "--command", "c"]) == 2
    assert "use letters, digits" in capsys.readouterr().err
    assert not (shelf / "tiny" / CARD_FILE).exists() and not any(p.name.startswith(".") for p in shelf.iterdir())


def test_measure_reads_the_metric_from_evaluate_json_and_quotes_its_errors(tmp_path, monkeypatch):
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        if "broken" in command[5]:
            return subprocess.CompletedProcess(command, 2, "", "attnkit: error: broken: no such checkpoint\n")
        return subprocess.CompletedProcess(command, 0, '{"data": "digits", "accuracy": 97.5, "count": 359}\n', "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert ship_module.measure(tmp_path, data="digits", metric="accuracy") == 97.5
    expected = ["-m", "attnkit.cli", "evaluate", "--checkpoint", str(tmp_path), "--data", "digits", "--json"]
    assert calls[0][1:] == [*expected, "--threads", "1", "--device", "cpu", "--no-progress"]
    ship_module.measure(tmp_path, data="cmudict", metric="accuracy", beam=5)
    assert calls[1][8:11] == ["--json", "--beam", "5"]
    with pytest.raises(ValueError, match=r"--metric 'wer': `attnkit evaluate --json` reports accuracy, count$"):
        ship_module.measure(tmp_path, data="digits", metric="wer")
    with pytest.raises(ValueError, match=r"failed: attnkit: error: broken: no such checkpoint$"):
        ship_module.measure(tmp_path / "broken", data="digits", metric="accuracy")


def test_figures_of_another_metric_or_data_are_never_compared(tiny_run, shelf, monkeypatch, capsys):
    monkeypatch.setattr(ship_module, "measure", lambda *args, **kwargs: 0.5)
    assert ship(tiny_run, shelf) == 0  # accuracy 0.5 on digits
    before = (shelf / "tiny" / CARD_FILE).read_text()
    for swap in (("accuracy", "loss"), ("digits", "digits-other")):
        argv = [str(tiny_run), "tiny", "--data", "digits", "--metric", "accuracy", "--command", COMMAND]
        argv[argv.index(swap[0])] = swap[1]
        assert ship_main([*argv, "--shelf", str(shelf), "--results", ""]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("ship: error: tiny: shipped with accuracy 0.5 on digits, which cannot be compared")
        assert len(err.splitlines()) == 1 and "--replace" in err
    assert (shelf / "tiny" / CARD_FILE).read_text() == before


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ({"train_seconds": None}, "metrics.json: field 'train_seconds' is missing, not a number; give --minutes"),
        ({"train_seconds": "12"}, "metrics.json: field 'train_seconds' is '12', not a number"),
        ({"init_from": {"training_minutes": "x"}}, "metrics.json: field 'training_minutes' is 'x', not a number"),
        ({"init_from": [1]}, "metrics.json: field 'init_from' is [1], not an object"),
    ],
)
def test_a_run_missing_an_expected_field_is_refused_in_one_line(tiny_run, shelf, tmp_path, capsys, damage, expected):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    metrics = json.loads((run / "metrics.json").read_text())
    metrics.update(damage)
    metrics = {key: value for key, value in metrics.items() if value is not None}
    (run / "metrics.json").write_text(json.dumps(metrics))
    assert ship(run, shelf) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ship: error:") and expected in err and len(err.splitlines()) == 1
    assert list(shelf.iterdir()) == []


def test_a_damaged_shipped_card_is_refused_in_one_line_and_replace_replaces_it(tiny_run, shelf, monkeypatch, capsys):
    monkeypatch.setattr(ship_module, "measure", lambda *args, **kwargs: 0.5)
    assert ship(tiny_run, shelf) == 0
    card = json.loads((shelf / "tiny" / CARD_FILE).read_text())
    del card["value"]
    (shelf / "tiny" / CARD_FILE).write_text(json.dumps(card))
    assert ship(tiny_run, shelf) == 2
    err = capsys.readouterr().err.strip()
    assert "card.json: field 'value' is missing, not a number; --replace to replace it" in err
    assert len(err.splitlines()) == 1
    (shelf / "tiny" / CARD_FILE).write_text("{not json")
    assert ship(tiny_run, shelf) == 2 and "not readable JSON" in capsys.readouterr().err
    assert ship(tiny_run, shelf, "--replace") == 0 and read_card("tiny")["value"] == 0.5
