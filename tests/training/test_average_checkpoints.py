"""Averaging checkpoints: the weights are the element-wise mean, the result loads and decodes, mismatches are refused."""

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnkit.pretrained import shipped_path
from attnkit.training.average_checkpoints import average_checkpoints, main


def _copy_with_weights(source, target, change):
    shutil.copytree(source, target)
    for name in ("MODEL_CARD.md", "card.json"):
        (target / name).unlink(missing_ok=True)
    from safetensors import safe_open

    with safe_open(str(target / "model.safetensors"), "pt") as handle:
        metadata = handle.metadata()
    weights = load_file(str(target / "model.safetensors"))
    save_file({k: change(v) for k, v in weights.items()}, str(target / "model.safetensors"), metadata=metadata)
    return target


def test_the_average_is_the_mean_of_the_weights_and_loads(tmp_path):
    import attnkit

    shipped = shipped_path("dates-transformer")
    a = _copy_with_weights(shipped, tmp_path / "a", lambda t: t)
    b = _copy_with_weights(shipped, tmp_path / "b", lambda t: t + 0.5 if t.is_floating_point() else t)
    out = average_checkpoints([a, b], tmp_path / "soup")
    first, second, mean = (load_file(str(p / "model.safetensors")) for p in (a, b, out))
    for name, tensor in mean.items():
        torch.testing.assert_close(tensor, (first[name] + second[name]) / 2)
    assert json.loads((out / "config.json").read_text())["attnkit"]["metadata"] == {
        "kind": "average",
        "sources": [str(a), str(b)],
    }
    same = average_checkpoints([a, a], tmp_path / "same")  # the mean of one model with itself is that model
    assert attnkit.load(same).translate(["4. März 1997"])[0].text == attnkit.load(a).translate(["4. März 1997"])[0].text


def test_another_architecture_or_vocabulary_is_refused_in_one_line(tmp_path, capsys):
    shipped = shipped_path("dates-transformer")
    a = _copy_with_weights(shipped, tmp_path / "a", lambda t: t)
    b = _copy_with_weights(shipped, tmp_path / "b", lambda t: t)
    config = json.loads((b / "config.json").read_text())
    config["data"] = "other"
    (b / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="'data' differs"):
        average_checkpoints([a, b], tmp_path / "x")
    c = _copy_with_weights(shipped, tmp_path / "c", lambda t: t)
    (c / "target_tokenizer.json").write_text("{}")
    with pytest.raises(ValueError, match=r"target_tokenizer\.json differs"):
        average_checkpoints([a, c], tmp_path / "y")
    assert main([str(a), "--out", str(tmp_path / "z")]) == 2
    assert capsys.readouterr().err.startswith("attnkit: error: give at least two checkpoints")
