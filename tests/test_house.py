"""House rules of the source tree, read from the code itself: no import cycles (imports inside functions and under
``TYPE_CHECKING`` count: a cycle is a cycle for the reader), no source file over 400 lines, every module in a layer
and imports only pointing down, the command line and the inference modules free of
training (they read checkpoints through ``attnkit.checkpointing``), and no command switches on checkpoint kinds."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "attnkit"
LAYERS = {
    "masks": 1,
    "scores": 2,
    "distributions": 2,
    "functional": 2,
    "attention": 3,
    "pooling": 3,
    "multihead": 3,
    "multihead_dropin": 3,
    "multihead_fast": 3,
    "multihead_torch": 3,
    "positions": 3,
    "kv_cache": 3,
    "outputs": 3,
    "models": 4,
    "decoding": 4,
    "decoding_threads": 4,
    "_beams": 4,
    "data": 5,
    "runtime": 5,
    "pretrained": 5,
    "checkpointing": 5,
    "training": 5,
    "explain": 5,
    "tasks": 5,
    "cli": 6,
    "experiments": 6,
}


def modules() -> dict[str, Path]:
    """``attnkit.x.y`` -> its file, for every module of the package."""
    found = {}
    for path in SOURCE.rglob("*.py"):
        parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The attnkit modules ``name`` imports anywhere in its file (parent packages excluded: importing a child
    runs its parents' ``__init__`` anyway)."""
    is_package = path.name == "__init__.py"
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            candidates = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name and not name.startswith(candidate + "."):
                targets.add(candidate)
    return targets


def import_cycles(graph: dict[str, set[str]], files: dict[str, Path]) -> list[list[str]]:
    """Strongly connected components of more than one module (a package ``__init__`` re-exporting its own
    children does not count), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            core = sorted(m for m in component if files[m].name != "__init__.py")
            if len(core) > 1:
                cycles.append(core)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    """The check itself can fail: two modules importing each other, one of them inside a function."""
    package = tmp_path / "attnkit"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from attnkit.b import g\n")
    (package / "b.py").write_text("def g():\n    from attnkit.a import x\n")
    files = {"attnkit": package / "__init__.py", "attnkit.a": package / "a.py", "attnkit.b": package / "b.py"}
    graph = {name: imports_of(name, path, files) for name, path in files.items()}
    assert import_cycles(graph, files) == [["attnkit.a", "attnkit.b"]]


def test_no_import_cycles():
    files = modules()
    graph = {name: imports_of(name, path, files) for name, path in files.items()}
    assert import_cycles(graph, files) == []


def test_no_source_file_over_400_lines():
    long = {
        str(path.relative_to(SOURCE)): n
        for path in SOURCE.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert long == {}


def layer_of(module: str) -> int | None:
    """The layer of ``attnkit.x...`` (by ``x``); None for the package itself (its lazy facade)."""
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_every_module_has_a_layer():
    assert [name for name in modules() if name != "attnkit" and layer_of(name) is None] == []


def upward_imports(files: dict[str, Path]) -> list[str]:
    """Each import of a module by one of a lower layer."""
    return [
        f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
        for name, path in files.items()
        for target in sorted(imports_of(name, path, files))
        if layer_of(name) is not None and (layer_of(target) or 0) > layer_of(name)
    ]


def test_imports_only_point_down():
    assert upward_imports(modules()) == []


def test_the_layer_check_finds_an_upward_import_inside_a_function(tmp_path):
    package = tmp_path / "attnkit"
    package.mkdir()
    (package / "masks.py").write_text("def f():\n    from attnkit.models import x\n")
    (package / "models.py").write_text("from attnkit.masks import f\n")
    files = {"attnkit.masks": package / "masks.py", "attnkit.models": package / "models.py"}
    assert upward_imports(files) == ["attnkit.masks (layer 1) imports attnkit.models (layer 4)"]


# What may run a trained model without training it: the command line, each task's inference, explanation,
# translation and export modules, the shipped models and the explanation package. They read a checkpoint through
# attnkit.checkpointing (the format and its JSON configs) and import nothing of attnkit.training, at module level or
# inside a function (#36); devices and precision come from attnkit.runtime.
INFERENCE_PACKAGES = ("attnkit.cli", "attnkit.pretrained", "attnkit.explain", "attnkit.tasks.seq2seq.ctranslate2")
INFERENCE_MODULES = ("inference", "explain", "translate_command")


def is_inference(name: str) -> bool:
    """Whether ``name`` is the command line, a module that runs a trained model (see above), or the checkpoint format
    they read (which training writes, and so must not import it either)."""
    packages = (*INFERENCE_PACKAGES, "attnkit.checkpointing")
    in_package = any(name == package or name.startswith(package + ".") for package in packages)
    return in_package or (name.startswith("attnkit.tasks.") and name.rpartition(".")[2] in INFERENCE_MODULES)


def training_imports(files: dict[str, Path]) -> dict[str, list[str]]:
    """The command line's and the inference modules' imports of ``attnkit.training`` (its alias paths included)."""
    reached = {
        name: sorted(
            target
            for target in imports_of(name, path, files)
            if target == "attnkit.training" or target.startswith("attnkit.training.")
        )
        for name, path in files.items()
        if is_inference(name)
    }
    return {name: targets for name, targets in reached.items() if targets}


def test_the_command_line_and_inference_import_no_training():
    files = modules()
    checked = {name for name in files if is_inference(name)}
    assert {"attnkit.cli", "attnkit.cli.train", "attnkit.pretrained", "attnkit.explain"} <= checked
    assert {f"attnkit.tasks.{task}.inference" for task in ("classify", "seq2seq", "vision")} <= checked
    assert {"attnkit.tasks.seq2seq.ctranslate2.loaded", "attnkit.checkpointing._read"} <= checked
    assert training_imports(files) == {}


def test_importing_the_command_line_or_an_inference_module_loads_no_training():
    """Transitively too: each module of :func:`is_inference`, imported in a fresh process, leaves no
    ``attnkit.training`` module in ``sys.modules`` (a shared objective importing training would)."""
    names = sorted(name for name in modules() if is_inference(name) and not name.endswith(".__main__"))
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "    loaded = sorted(m for m in sys.modules if m == 'attnkit.training' or m.startswith('attnkit.training.'))\n"
        "    if loaded:\n"
        "        sys.exit(f'{name} loads {loaded}')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=SOURCE.parents[1])
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_training_import_check_finds_one_inside_a_function(tmp_path):
    package = tmp_path / "attnkit"
    (package / "tasks" / "toy").mkdir(parents=True)
    (package / "training").mkdir()
    (package / "tasks" / "toy" / "inference.py").write_text("def f():\n    from attnkit.training import fit\n")
    (package / "cli.py").write_text("import attnkit.training.loop\n")
    (package / "training" / "__init__.py").write_text("")
    (package / "training" / "loop.py").write_text("")
    files = {
        "attnkit.tasks.toy.inference": package / "tasks" / "toy" / "inference.py",
        "attnkit.cli": package / "cli.py",
        "attnkit.training": package / "training" / "__init__.py",
        "attnkit.training.loop": package / "training" / "loop.py",
    }
    assert training_imports(files) == {
        "attnkit.tasks.toy.inference": ["attnkit.training"],
        "attnkit.cli": ["attnkit.training.loop"],
    }


@pytest.mark.parametrize(
    ("pattern", "where"),
    [
        ("config.model ==", "src"),
        ("config.model !=", "src"),
        ("kind ==", "src/attnkit/cli"),
        ("kind !=", "src/attnkit/cli"),
        ("kind ==", "src/attnkit/tasks"),
        ("kind !=", "src/attnkit/tasks"),
    ],
)
def test_no_switch_on_model_or_checkpoint_kind(pattern, where):
    """Commands look a checkpoint's task up in the registry; model families are looked up by name."""
    root = SOURCE.parents[1]
    hits = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for path in (root / where).rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if pattern in line
    ]
    assert hits == []


def test_the_cli_modules_import_no_torch_at_module_level():
    """``attnkit --help`` builds every parser: the modules it imports must not import torch at their top."""
    root = SOURCE.parents[1]
    code = (
        "import sys; from attnkit.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'numpy', 'tokenizers', 'matplotlib') if m in sys.modules))"
    )
    result = subprocess.run(
        [__import__("sys").executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert result.stdout.strip() == "[]"
