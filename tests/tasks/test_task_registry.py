"""The task registry: a new task added through the registry alone trains, evaluates and predicts from the command
line; checkpoints of unknown kinds are refused in one line; ``attnkit.load`` returns a ready model."""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import sys
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
from attnkit.checkpointing import load_model_weights, read_config_of_kind, save_checkpoint
from attnkit.checkpointing.config_io import JsonConfig
from attnkit.cli import main
from attnkit.runtime.devices import ready_for_inference
from attnkit.tasks.options import add_runtime_options, add_training_options, fit_config_from_args, read_texts, say
from attnkit.training.loop import fit
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
    # an option another task brings to predict is refused for this one, naming the option and its task
    assert main(["predict", "--checkpoint", str(run), "--text", "abc", "--index", "0"]) == 2
    assert capsys.readouterr().err == "attnkit: error: --index: an option of the vision task, not of toy checkpoints\n"
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


# ------------------------------------------------------------------- the template every built-in task follows

# docs/architecture.md, "Adding a task": the modules of a task package, lowest first. A module imports only modules
# of lower rows (directly, or through the package's other modules); inference never imports training.
TEMPLATE = (("config",), ("data",), ("objective",), ("inference",), ("explain", "training"), ("commands",))
TEMPLATE_MODULES = [name for row in TEMPLATE for name in row]
RANK = {name: rank for rank, row in enumerate(TEMPLATE) for name in row}
BUILTIN = [module.rsplit(".", 1)[1] for module in tasks.BUILTIN_TASKS]
TASKS_SOURCE = Path(tasks.__file__).parent
SHARED = {"run"}  # packages of attnkit.tasks that every task uses and that are no task (the run directory's guards)


def imported_modules(path: Path, package: str) -> set[str]:
    """The modules of ``attnkit.tasks.<package>`` that ``path`` imports, at module level or inside functions
    (``"config"``, ``"ctranslate2.export"``), and any other task package it imports (``"!seq2seq"``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] != ["attnkit", "tasks"] or len(parts) < 4:
                continue
            if parts[2] != package:
                if (TASKS_SOURCE / parts[2]).is_dir() and parts[2] not in SHARED:  # another task's package
                    found.add(f"!{parts[2]}")
            elif (TASKS_SOURCE / package / f"{parts[3]}.py").exists():
                found.add(parts[3])
            elif (TASKS_SOURCE / package / parts[3] / f"{parts[4]}.py").exists() if len(parts) > 4 else False:
                found.add(f"{parts[3]}.{parts[4]}")
    return found


def module_imports(package: str) -> dict[str, set[str]]:
    """Each module of the task package -> the package's modules it imports."""
    root = TASKS_SOURCE / package
    return {
        ".".join(path.relative_to(root).with_suffix("").parts): imported_modules(path, package)
        for path in root.rglob("*.py")
    }


def template_imports(graph: dict[str, set[str]], module: str) -> set[str]:
    """The template modules ``module`` reaches: directly, or through modules outside the template."""
    reached, seen, todo = set(), {module}, list(graph[module])
    while todo:
        name = todo.pop()
        if name in seen or name.startswith("!"):
            continue
        seen.add(name)
        if name in RANK:
            reached.add(name)
        else:
            todo.extend(graph.get(name, ()))
    return reached


@pytest.mark.parametrize("package", BUILTIN)
def test_a_task_holds_every_module_of_the_template(package):
    missing = [name for name in TEMPLATE_MODULES if not (TASKS_SOURCE / package / f"{name}.py").exists()]
    assert missing == [], f"attnkit.tasks.{package} lacks {missing} (docs/architecture.md, 'Adding a task')"


@pytest.mark.parametrize("package", BUILTIN)
def test_a_task_config_module_holds_its_kind_config_and_builders(package):
    config = importlib.import_module(f"attnkit.tasks.{package}.config")
    spec = importlib.import_module(f"attnkit.tasks.{package}").SPEC
    assert spec.kind == config.KIND
    own = [value for value in vars(config).values() if getattr(value, "__module__", None) == config.__name__]
    assert any(isinstance(value, type) and issubclass(value, JsonConfig) for value in own)
    assert callable(config.config_from_args)
    assert any(callable(value) and value.__name__.startswith("build_") for value in own)


@pytest.mark.parametrize("package", BUILTIN)
def test_a_task_imports_its_template_modules_in_one_direction(package):
    graph = module_imports(package)
    wrong = {
        module: sorted(name for name in template_imports(graph, module) if RANK[name] >= RANK[module])
        for module in TEMPLATE_MODULES
        if module in graph
    }
    assert {module: names for module, names in wrong.items() if names} == {}
    assert "training" not in template_imports(graph, "inference")
    assert [module for module, names in graph.items() if any(name.startswith("!") for name in names)] == []


@pytest.mark.parametrize("package", BUILTIN)
def test_a_task_hooks_live_in_its_commands_module(package):
    spec = importlib.import_module(f"attnkit.tasks.{package}").SPEC
    hooks = [spec.train, spec.load, spec.evaluate, spec.predict, spec.explain, spec.add_train_arguments]
    assert {hook.__module__ for hook in hooks if hook is not None} == {f"attnkit.tasks.{package}.commands"}


def test_the_import_check_catches_inference_importing_training(tmp_path, monkeypatch):
    package = tmp_path / "toy"
    package.mkdir()
    (tmp_path / "seq2seq").mkdir()  # another task
    (package / "training.py").write_text("")
    (package / "encoding.py").write_text("from attnkit.tasks.toy.training import fit\n")
    (package / "inference.py").write_text("def load():\n    from attnkit.tasks.toy import encoding\n")
    (package / "config.py").write_text("def f():\n    import attnkit.tasks.seq2seq.config\n")
    monkeypatch.setattr(sys.modules[__name__], "TASKS_SOURCE", tmp_path)
    graph = module_imports("toy")
    assert template_imports(graph, "inference") == {"training"}  # found through encoding, inside a function
    assert graph["config"] == {"!seq2seq"}
