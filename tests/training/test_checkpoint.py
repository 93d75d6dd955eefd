"""Checkpoints: exact round trips, tied weights, refusal of every other format (without unpickling), atomic writes."""

from __future__ import annotations

import json
import math
import os
import pickle
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from attnkit.checkpointing import (
    CheckpointError,
    load_model_weights,
    read_config,
    read_config_of_kind,
    read_metadata,
    read_trainer_state,
    recover_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from attnkit.checkpointing import _write as writer

SOURCES = Path(__file__).resolve().parents[2] / "src" / "attnkit"


class Tied(nn.Module):
    """An embedding whose matrix is also the output projection, plus a buffer."""

    def __init__(self, vocab: int = 7, dim: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.out = nn.Linear(dim, vocab, bias=True)
        self.out.weight = self.embed.weight
        self.register_buffer("scale", torch.arange(3.0))


def fresh(seed: int) -> Tied:
    torch.manual_seed(seed)
    return Tied()


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


class Boom:
    """Unpickling this object creates a marker file: proof that something was unpickled."""

    marker: Path

    def __reduce__(self):
        return (Path.touch, (self.marker,))


# ----------------------------------------------------------------------------------------------- round trips


def test_round_trip_restores_weights_config_metadata_and_extra_files(tmp_path):
    source = fresh(0)
    tokenizer = tmp_path / "tok.json"
    tokenizer.write_text('{"vocab": ["a", "b"]}')
    directory = save_checkpoint(
        tmp_path / "run" / "best",
        source,
        model_config={"vocab": 7, "dim": 4, "layers": [1, 2]},
        extra_files={"tokenizer.json": tokenizer},
        metadata={"epoch": 3, "metrics": {"accuracy": 0.5, "loss": math.nan}},
    )
    assert sorted(p.name for p in directory.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    assert (directory / "tokenizer.json").read_text() == tokenizer.read_text()
    assert read_config(directory) == {"vocab": 7, "dim": 4, "layers": [1, 2]}
    meta = read_metadata(directory)
    assert meta["format"] == "attnkit.checkpoint" and meta["files"] == ["tokenizer.json"]
    assert meta["version"] and meta["torch"] == torch.__version__ and meta["trainer_state"] is False
    assert meta["metadata"] == {"epoch": 3, "metrics": {"accuracy": 0.5, "loss": None}}  # strict JSON: NaN -> null

    target = fresh(1)
    assert not same_weights(source, target)
    load_model_weights(target, directory)
    assert same_weights(source, target)


def test_a_config_of_another_kind_is_refused_by_name(tmp_path):
    directory = save_checkpoint(tmp_path / "c", fresh(0), model_config={"kind": "vision", "dim": 4})
    assert read_config_of_kind(directory, "vision") == {"dim": 4}
    with pytest.raises(CheckpointError, match=r"not a seq2seq checkpoint \(kind='vision'\)"):
        read_config_of_kind(directory, "seq2seq")
    untyped = save_checkpoint(tmp_path / "u", fresh(0), model_config={"dim": 4})
    with pytest.raises(CheckpointError, match="not a classifier checkpoint \\(kind=None\\)"):
        read_config_of_kind(untyped, "classifier")


def test_tied_weights_are_stored_once_and_stay_tied(tmp_path):
    source = fresh(0)
    save_checkpoint(tmp_path / "c", source)
    stored = load_file(tmp_path / "c" / "model.safetensors")
    assert len([k for k in stored if k in ("embed.weight", "out.weight")]) == 1
    target = fresh(1)
    load_model_weights(target, tmp_path / "c")
    assert same_weights(source, target)
    assert target.out.weight is target.embed.weight


def test_trainer_state_round_trips_nested_values_and_an_optimizer_exactly(tmp_path):
    model = fresh(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.8, 0.95))
    model.out(model.embed(torch.tensor([1, 2]))).sum().backward()
    optimizer.step()
    state = {
        "optimizer": optimizer.state_dict(),
        "pair": (1, "two", None),
        "by_int": {0: 1.5, 7: [math.inf, -math.inf]},
        "nan": math.nan,
        "empty": torch.zeros(0, 3),
        "view": model.embed.weight,  # shares memory with nothing else in the state
    }
    save_checkpoint(tmp_path / "last", model, trainer_state=state)
    back = read_trainer_state(tmp_path / "last")
    assert back["pair"] == (1, "two", None)
    assert back["by_int"] == {0: 1.5, 7: [math.inf, -math.inf]}
    assert math.isnan(back["nan"])
    assert back["empty"].shape == (0, 3)
    assert torch.equal(back["view"], model.embed.weight)
    saved, restored = optimizer.state_dict(), back["optimizer"]
    assert restored["param_groups"] == saved["param_groups"]
    for index, slots in saved["state"].items():
        for name, value in slots.items():
            assert torch.equal(restored["state"][index][name], value), (index, name)
    other = torch.optim.AdamW(fresh(1).parameters(), lr=1.0)
    other.load_state_dict(restored)  # a real optimizer accepts it
    assert other.param_groups[0]["betas"] == (0.8, 0.95)
    json.loads((tmp_path / "last" / "trainer_state.json").read_text())  # strict JSON, no NaN literals
    assert "NaN" not in (tmp_path / "last" / "trainer_state.json").read_text()


def test_unstorable_values_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="cannot store a object without pickle"):
        save_checkpoint(tmp_path / "c", fresh(0), trainer_state={"x": object()})
    with pytest.raises(ValueError, match="must not use the key 'attnkit'"):
        save_checkpoint(tmp_path / "c", fresh(0), model_config={"attnkit": 1})
    with pytest.raises(ValueError, match="JSON-serialisable"):
        save_checkpoint(tmp_path / "c", fresh(0), model_config={"f": {1, 2}})
    with pytest.raises(ValueError, match="plain file name"):
        save_checkpoint(tmp_path / "c", fresh(0), extra_files={"../evil.json": tmp_path})
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(tmp_path / "c", fresh(0), extra_files={"config.json": tmp_path})
    with pytest.raises(ValueError, match="is not a file"):
        save_checkpoint(tmp_path / "c", fresh(0), extra_files={"tokenizer.json": tmp_path / "missing.json"})
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------- refusals


def test_pickle_files_are_refused_without_being_unpickled(tmp_path):
    marker = tmp_path / "unpickled"
    Boom.marker = marker
    for name in ("model.pt", "weights.pkl", "pytorch_model.bin"):
        path = tmp_path / name
        path.write_bytes(pickle.dumps(Boom()))
        with pytest.raises(CheckpointError, match=rf"{name}: refusing to load a \.\w+ file"):
            load_model_weights(fresh(0), path)
        with pytest.raises(CheckpointError, match=name):
            read_config(path)
    # A directory with a pickle instead of model.safetensors: refused, the pickle never opened.
    directory = tmp_path / "dir"
    save_checkpoint(directory, fresh(0))
    (directory / "model.safetensors").unlink()
    (directory / "model.pt").write_bytes(pickle.dumps(Boom()))
    with pytest.raises(CheckpointError, match=r"dir: missing model\.safetensors"):
        load_model_weights(fresh(0), directory)
    assert not marker.exists()


def test_the_package_never_unpickles():
    sources = sorted(SOURCES.rglob("*.py"))
    assert len(sources) > 50 and any(path.name == "_write.py" for path in sources)
    for path in sources:
        source = path.read_text(encoding="utf-8")
        assert "torch.load(" not in source and "import pickle" not in source, path


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: (d / "config.json").unlink(), r"c: no config\.json; not an attnkit checkpoint"),
        (lambda d: (d / "config.json").write_text('{"vocab": 7,\n  oops}'), r"config\.json:2:3: malformed JSON"),
        (lambda d: (d / "config.json").write_text("[1, 2]"), r"config\.json: expected a JSON object"),
        (lambda d: (d / "config.json").write_text('{"model_type": "bert"}'), r"no 'attnkit' section .*another tool"),
        (lambda d: _edit_section(d, format_version=99), "format 99 is newer"),
        (lambda d: _edit_section(d, files=["tokenizer.json"]), r"c: missing tokenizer\.json"),
        (lambda d: (d / "model.safetensors").write_bytes(b"\x10\x00garbage"), "not a readable safetensors file"),
        (lambda d: _truncate(d / "model.safetensors"), "not a readable safetensors file"),
    ],
)
def test_malformed_checkpoints_are_refused_naming_the_path(tmp_path, damage, message):
    directory = tmp_path / "c"
    save_checkpoint(directory, fresh(0), model_config={"vocab": 7})
    damage(directory)
    model = fresh(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError, match=message) as caught:
        load_model_weights(model, directory)
    assert str(directory) in str(caught.value)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def _edit_section(directory: Path, **changes) -> None:
    config = json.loads((directory / "config.json").read_text())
    config["attnkit"].update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-9])


def test_weights_that_do_not_fit_are_refused_and_the_model_is_untouched(tmp_path):
    save_checkpoint(tmp_path / "c", fresh(0))
    stored = load_file(tmp_path / "c" / "model.safetensors")
    header_alias = {"format": "pt", "attnkit.aliases": json.dumps({"out.weight": "embed.weight"})}

    save_file({**stored, "extra.weight": torch.zeros(2)}, tmp_path / "c" / "model.safetensors", header_alias)
    model = fresh(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(CheckpointError, match=r"unexpected tensors \['extra.weight'\]"):
        load_model_weights(model, tmp_path / "c")

    save_file({k: v for k, v in stored.items() if k != "out.bias"}, tmp_path / "c" / "model.safetensors", header_alias)
    with pytest.raises(CheckpointError, match=r"missing tensors \['out.bias'\]"):
        load_model_weights(model, tmp_path / "c")

    save_checkpoint(tmp_path / "big", Tied(vocab=9))
    with pytest.raises(CheckpointError, match=r"embed.weight: shape \[9, 4\] in the checkpoint, \[7, 4\] in the model"):
        load_model_weights(model, tmp_path / "big")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_trainer_state_problems_are_refused(tmp_path):
    save_checkpoint(tmp_path / "best", fresh(0))
    with pytest.raises(CheckpointError, match=r"no trainer state .* cannot be resumed from"):
        read_trainer_state(tmp_path / "best")

    save_checkpoint(tmp_path / "last", fresh(0), trainer_state={"m": torch.ones(2)})
    tensors = tmp_path / "last" / "trainer_state.safetensors"
    save_file({"m": torch.ones(2), "stowaway": torch.zeros(1)}, tensors)
    with pytest.raises(CheckpointError, match=r"unexpected tensors nobody refers to: \['stowaway'\]"):
        read_trainer_state(tmp_path / "last")
    save_file({"other": torch.ones(2)}, tensors)
    with pytest.raises(CheckpointError, match="refers to a tensor 'm' that"):
        read_trainer_state(tmp_path / "last")


# ---------------------------------------------------------------------------------------------- atomic writes


def test_saving_replaces_the_previous_checkpoint_and_leaves_no_temporaries(tmp_path):
    save_checkpoint(tmp_path / "last", fresh(0), trainer_state={"epoch": 1})
    second = fresh(1)
    save_checkpoint(tmp_path / "last", second, trainer_state={"epoch": 2})
    assert read_trainer_state(tmp_path / "last") == {"epoch": 2}
    model = fresh(2)
    load_model_weights(model, tmp_path / "last")
    assert same_weights(model, second)
    assert [p.name for p in tmp_path.iterdir()] == ["last"]


def test_a_failed_save_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    first = fresh(0)
    save_checkpoint(tmp_path / "last", first, trainer_state={"epoch": 1})

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "_fsync_dir", fail)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(tmp_path / "last", fresh(1), trainer_state={"epoch": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["last"]
    assert read_trainer_state(tmp_path / "last") == {"epoch": 1}


def test_a_crash_between_the_two_renames_is_recovered(tmp_path, monkeypatch):
    first = fresh(0)
    save_checkpoint(tmp_path / "last", first, trainer_state={"epoch": 1})
    real_replace, calls = os.replace, []

    def replace_then_die(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the old checkpoint has moved aside; the process "dies" before the new one moves in
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_then_die)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(tmp_path / "last", fresh(1), trainer_state={"epoch": 2})
    monkeypatch.setattr(os, "replace", real_replace)
    assert not (tmp_path / "last").exists() and (tmp_path / ".last.old").is_dir()

    recover_checkpoint(tmp_path / "last")
    assert [p.name for p in tmp_path.iterdir()] == ["last"]
    assert read_trainer_state(tmp_path / "last") == {"epoch": 1}
    model = fresh(3)
    load_model_weights(model, tmp_path / "last")
    assert same_weights(model, first)


def test_a_file_in_the_way_is_not_replaced(tmp_path):
    (tmp_path / "last").write_text("not mine")
    with pytest.raises(CheckpointError, match="exists and is not a directory"):
        save_checkpoint(tmp_path / "last", fresh(0))
    assert (tmp_path / "last").read_text() == "not mine"


def test_a_checkpoint_path_means_itself_and_a_run_directory_means_its_best(tmp_path):
    save_checkpoint(tmp_path / "run" / "best", fresh(0))
    save_checkpoint(tmp_path / "run" / "last", fresh(1), trainer_state={"epoch": 1})
    assert resolve_checkpoint(tmp_path / "run") == tmp_path / "run" / "best"
    assert resolve_checkpoint(str(tmp_path / "run" / "last")) == tmp_path / "run" / "last"
    assert resolve_checkpoint(tmp_path / "run" / "best") == tmp_path / "run" / "best"
    model = fresh(2)
    load_model_weights(model, resolve_checkpoint(tmp_path / "run"))
    assert same_weights(model, fresh(0))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, r"x: does not exist \(expected a checkpoint or run directory\)$"),
        (lambda p: p.mkdir(), r"x: not a checkpoint or run directory \(no config\.json, no best/config\.json\)$"),
        (lambda p: (p / "last").mkdir(parents=True), r"x: not a checkpoint or run directory"),
        (lambda p: p.write_text("weights"), r"x: is a file, not a checkpoint directory"),
    ],
)
def test_anything_else_is_refused_in_one_line_naming_the_path(tmp_path, make, message):
    path = tmp_path / "x"
    make(path)
    with pytest.raises(CheckpointError, match=message) as error:
        resolve_checkpoint(path)
    assert str(error.value).startswith(str(path)) and "\n" not in str(error.value)


def test_a_pickle_file_is_refused_by_the_path_rule_as_a_pickle(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"not read")
    with pytest.raises(CheckpointError, match=r"model\.pt: refusing to load a \.pt file \(pickle-based"):
        resolve_checkpoint(tmp_path / "model.pt")
