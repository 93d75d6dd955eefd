"""The shelf of shipped models (``attnkit/pretrained/``): caps, cards, package data, and names resolved wherever a
checkpoint path is (an existing path wins; an unknown name lists the shipped ones)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from torch import nn

import attnkit.pretrained as pretrained
from attnkit.checkpointing import CheckpointError, resolve_checkpoint, save_checkpoint
from attnkit.cli import main
from attnkit.pretrained import (
    CARD_FILE,
    CARD_KEYS,
    MAX_MODEL_BYTES,
    MAX_TOTAL_BYTES,
    MODEL_CARD_FILE,
    SHELF,
    folder_bytes,
    shipped_cards,
    shipped_names,
)

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = shipped_names()


def test_every_shipped_model_and_the_whole_shelf_fit_the_caps():
    sizes = {name: folder_bytes(SHELF / name) for name in SHIPPED}
    assert {name: size for name, size in sizes.items() if size > MAX_MODEL_BYTES} == {}
    assert sum(sizes.values()) <= MAX_TOTAL_BYTES
    stray = [path.name for path in SHELF.iterdir() if path.is_dir() and path.name not in SHIPPED]
    assert [name for name in stray if name != "__pycache__"] == []  # no half-shipped (staging) folders


@pytest.mark.parametrize("name", SHIPPED)
def test_each_card_describes_its_own_checkpoint(name):
    folder = SHELF / name
    card = json.loads((folder / CARD_FILE).read_text())
    assert set(CARD_KEYS) <= set(card) and card["name"] == name and card["split"] == "test"
    checkpoint_bytes = folder_bytes(folder) - sum((folder / f).stat().st_size for f in (CARD_FILE, MODEL_CARD_FILE))
    assert card["size_bytes"] == checkpoint_bytes
    config = json.loads((folder / "config.json").read_text())
    assert card["kind"] == config["kind"]
    assert card["command"].startswith("attnkit train ") and card["training_minutes"] > 0
    assert card["evaluate"] == f"attnkit evaluate --checkpoint {name} --data {card['data']} --json" + (
        "" if "--beam" not in card["evaluate"] else card["evaluate"].split("--json", 1)[1]
    )
    human = (folder / MODEL_CARD_FILE).read_text()
    for fact in (card["command"], str(card["value"]), card["measured"], "## Known limits"):
        assert fact in human


def test_the_published_figures_are_the_cards_and_the_shelf_is_package_data():
    published = json.loads((ROOT / "docs" / "results" / "shipped.json").read_text())
    assert sorted(published) == SHIPPED
    for card in shipped_cards():
        assert published[card["name"]]["value"] == card["value"]
        assert published[card["name"]]["metric"] == card["metric"]
    notes = (ROOT / "docs" / "results" / "shipped_notes.md").read_text()  # results.md names each model's row
    assert [name for name in SHIPPED if f"`{name}`" not in notes] == []
    pyproject = (ROOT / "pyproject.toml").read_text()  # tomllib is Python 3.11+; attnkit runs on 3.10
    section = pyproject.split("[tool.setuptools.package-data]\n", 1)[1]
    line = next(line for line in section.splitlines() if line.startswith('"attnkit.pretrained" = '))
    patterns = ast.literal_eval(line.split(" = ", 1)[1])
    files = {path.relative_to(SHELF) for name in SHIPPED for path in (SHELF / name).iterdir()}
    unmatched = [str(file) for file in files if not any(file.match(pattern) for pattern in patterns)]
    assert unmatched == []


@pytest.fixture
def shelf(tmp_path, monkeypatch) -> Path:
    """A shelf of its own holding one checkpoint, ``tiny``, with a card."""
    shelf = tmp_path / "shelf"
    save_checkpoint(shelf / "tiny", nn.Linear(2, 1), model_config={"kind": "vision"})
    card = {key: 0 for key in CARD_KEYS} | {"name": "tiny", "kind": "vision", "data": "digits", "metric": "accuracy"}
    card |= {"command": "attnkit train vision", "evaluate": "attnkit evaluate --checkpoint tiny"}
    (shelf / "tiny" / CARD_FILE).write_text(json.dumps(card))
    (shelf / "other").mkdir()  # no card: not a shipped model
    monkeypatch.setattr(pretrained, "SHELF", shelf)
    monkeypatch.chdir(tmp_path)
    return shelf


def test_a_name_means_the_shipped_model_and_an_existing_path_wins(shelf, tmp_path):
    assert shipped_names() == ["tiny"]
    assert resolve_checkpoint("tiny") == shelf / "tiny"
    save_checkpoint(tmp_path / "tiny" / "best", nn.Linear(2, 1), model_config={"kind": "vision"})
    assert resolve_checkpoint("tiny") == Path("tiny") / "best"  # a run directory of that name, here
    with pytest.raises(CheckpointError, match=r"^other: no such checkpoint or run directory, and not a shipped"):
        resolve_checkpoint("other")


def test_an_unknown_name_is_one_error_line_listing_the_shipped_names(shelf, capsys):
    with pytest.raises(CheckpointError) as error:
        resolve_checkpoint("r9")
    assert str(error.value) == (
        "r9: no such checkpoint or run directory, and not a shipped model's name (shipped models: tiny)"
    )
    with pytest.raises(CheckpointError, match=r"^runs/r9: does not exist \(expected a checkpoint or run directory\)$"):
        resolve_checkpoint("runs/r9")  # a path is a path: no list of names
    assert main(["evaluate", "--checkpoint", "r9", "--data", "digits"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "shipped models: tiny" in err and err.startswith("attnkit: error: r9: ")


def test_attnkit_models_lists_the_cards(shelf, capsys):
    assert main(["models", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [card["name"] for card in listed] == ["tiny"] and set(CARD_KEYS) <= set(listed[0])
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["name", "kind", "data", "test", "figure", "size", "minutes"]
    assert out.splitlines()[1].split()[:3] == ["tiny", "vision", "digits"]
    assert "tiny: attnkit train vision" in out


def test_an_empty_shelf_lists_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(pretrained, "SHELF", tmp_path / "none")
    assert main(["models", "--json"]) == 0 and json.loads(capsys.readouterr().out) == []
    with pytest.raises(CheckpointError, match=r"not a shipped model's name \(no model is shipped\)$"):
        resolve_checkpoint("digits-nowhere")
