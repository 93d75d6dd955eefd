"""The task registry: a new task added through the registry alone trains, evaluates and predicts from the command
line; checkpoints of unknown kinds are refused in one line; ``attnkit.load`` returns a ready model."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import attnkit
from attnkit import tasks
from attnkit.cli import main
from attnkit.tasks.options import add_runtime_options, add_training_options, fit_config_from_args, read_texts, say
from attnkit.training.checkpointing import load_model_weights, read_config_of_kind, save_checkpoint
from attnkit.training.config_io import JsonConfig
from attnkit.training.loop import fit
from attnkit.training.precision import ready_for_inference
from attnkit.training.run_report import TrainReport, count_parameters, write_metrics

# ----------------------------------------------------------------------------------- a toy task: is a text long?


@dataclass
class ToyConfig(JsonConfig):
    kind_name: ClassVar[str] = "toy config"
    threshold: int = 5


def features(texts: Sequence[str]) -> torch.Tensor:
    return torch.tensor([[len(text) / 10.0, 1.0] for text in texts])  # [B, 2]


class ToyObjective:
    def __init__(self, model: nn.Module) -> None:
        self.model = model

    def loss(self, batch):
        x, y = batch
        return F.cross_entropy(self.model(x), y)

    @torch.no_grad()
    def evaluate(self, batches):
        correct = count = 0
        for x, y in batches:
            correct += int((self.model(x).argmax(-1) == y).sum())
            count += len(y)
        return {"accuracy": 100 * correct / count, "count": float(count)}  # rates in percent, as attnkit's


def toy_data(threshold: int) -> tuple[torch.Tensor, torch.Tensor]:
    texts = ["x" * n for n in range(1, 11)] * 8
    return features(texts), torch.tensor([int(len(t) > threshold) for t in texts])


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threshold", type=int, default=5)
    add_training_options(parser, epochs=30, batch_size=16, lr=0.1)
    add_runtime_options(parser)


def train(args: argparse.Namespace) -> int:
    config, fit_config = ToyConfig(args.threshold), fit_config_from_args(args)
    x, y = toy_data(config.threshold)
    model = nn.Linear(2, 2)
    batches = [(x[i : i + args.batch_size], y[i : i + args.batch_size]) for i in range(0, len(y), args.batch_size)]
    result = fit(
        ToyObjective(model),
        lambda epoch: batches,
        lambda: [(x, y)],
        fit_config,
        checkpoint_dir=args.out,
        model_config={"kind": "toy", **config.to_dict()},
    )
    report = TrainReport(result, None, Path(args.out) / "best", count_parameters(model), config)
    write_metrics(args.out, report, task="toy", data="toy", fit_config=fit_config, batch_size=args.batch_size)
    say(f"toy accuracy {result.best_metrics['accuracy']:.2f}%")
    return 0


@dataclass
class ToyModel:
    model: nn.Module
    config: ToyConfig

    def predict(self, texts: Sequence[str]) -> list[bool]:
        return [bool(label) for label in self.model(features(texts).to(self.model.weight.device)).argmax(-1)]


def load(checkpoint: Path, *, device: str = "auto", precision: str = "fp32") -> ToyModel:
    config = ToyConfig.from_dict(read_config_of_kind(checkpoint, "toy"))
    model = nn.Linear(2, 2)
    load_model_weights(model, checkpoint)
    return ToyModel(ready_for_inference(model, device, precision), config)


def evaluate(args: argparse.Namespace, checkpoints: Sequence[Path]) -> int:
    toy = load(checkpoints[0], device=args.device, precision=args.precision)
    x, y = toy_data(toy.config.threshold)
    with torch.no_grad():
        accuracy = 100 * float((toy.model(x.to(toy.model.weight.device)).argmax(-1).cpu() == y).float().mean())
    print(f"toy accuracy {accuracy:.2f}%")
    return 0


def predict(args: argparse.Namespace, checkpoint: Path) -> int:
    texts = read_texts(args)
    for text, long in zip(texts, load(checkpoint).predict(texts), strict=True):
        print(f"{'long' if long else 'short'}\t{text}")
    return 0


TOY = tasks.TaskSpec(
    kind="toy",
    name="toy",
    help="is a text longer than a threshold?",
    add_train_arguments=add_train_arguments,
    train=train,
    load=load,
    evaluate=evaluate,
    predict=predict,
)


@pytest.fixture
def toy_task():
    tasks.register_task(TOY)
    yield TOY
    tasks.unregister_task("toy")


def test_a_task_added_through_the_registry_alone_trains_evaluates_and_predicts(toy_task, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "toy", "--threshold", "4", "--out", str(run), "--no-progress", "--patience", "30"]) == 0
    assert "toy accuracy 100.00%" in capsys.readouterr().out
    metrics = json.loads((run / "metrics.json").read_text())
    assert (
        metrics["task"] == "toy" and metrics["config"] == {"threshold": 4} and metrics["best_valid"]["accuracy"] == 100
    )
    assert main(["evaluate", "--checkpoint", str(run)]) == 0  # a run directory means its best/
    assert capsys.readouterr().out.strip() == "toy accuracy 100.00%"
    assert main(["predict", "--checkpoint", str(run), "--text", "abc", "--text", "abcdefgh"]) == 0
    assert capsys.readouterr().out.splitlines() == ["short\tabc", "long\tabcdefgh"]
    assert attnkit.load(run).predict(["abcdefghij"]) == [True]
    assert main(["explain", "--checkpoint", str(run), "--text", "abc", "--out", str(tmp_path / "r.html")]) == 2
    assert "does not support toy checkpoints" in capsys.readouterr().err
    # registering the same kind twice is refused
    with pytest.raises(ValueError, match="already registered"):
        tasks.register_task(TOY)


def test_the_builtin_tasks_are_registered_in_order():
    assert [(task.kind, task.name) for task in tasks.registered_tasks()] == [
        ("classifier", "classify"),
        ("vision", "vision"),
        ("seq2seq", "seq2seq"),
    ]


def test_an_unknown_kind_is_refused_in_one_line_naming_the_kinds(tmp_path, capsys):
    checkpoint = save_checkpoint(tmp_path / "speech", nn.Linear(1, 1), model_config={"kind": "speech"})
    assert main(["evaluate", "--checkpoint", str(checkpoint)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kind 'speech'" in err and "classifier, vision, seq2seq" in err


def test_configs_refuse_unknown_keys_and_wrong_types_naming_the_field():
    from attnkit.tasks.classify.config import ClassifierConfig

    assert ClassifierConfig.from_dict(ClassifierConfig(embed_dim=16).to_dict()) == ClassifierConfig(embed_dim=16)
    with pytest.raises(ValueError, match=r"field 'embed_dim' must be an integer, got '16' \(str\)"):
        ClassifierConfig.from_dict({"embed_dim": "16"})
    with pytest.raises(ValueError, match=r"field 'label_names\[1\]' must be a string, got 2 \(int\)"):
        ClassifierConfig.from_dict({"label_names": ["a", 2]})
    with pytest.raises(ValueError, match="unknown classifier config keys: colour"):
        ClassifierConfig.from_dict({"colour": "red"})
    assert ClassifierConfig.from_dict({"dropout": 0}).dropout == 0  # an int where a float is expected is fine
    with pytest.raises(ValueError, match="field 'punctuated' must be true or false"):
        ClassifierConfig.from_dict({"punctuated": 1})


def test_toy_config_round_trips_through_the_shared_serialiser():
    assert ToyConfig.from_dict({"threshold": 3}) == ToyConfig(3)
    with pytest.raises(ValueError, match=r"toy config field 'threshold' must be an integer, got 3\.5"):
        ToyConfig.from_dict({"threshold": 3.5})
