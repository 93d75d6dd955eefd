"""The house rules for ``attnkit.training``: no import cycle among its modules (imports inside functions and under
``TYPE_CHECKING`` count, since a reader follows them too) and no module over 400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "attnkit" / "training"
PREFIX = "attnkit.training"


def imports_of(path: Path) -> set[str]:
    """The ``attnkit.training`` modules that ``path`` imports anywhere in its body."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.ImportFrom):  # relative: attnkit writes none, but they would count
            base = ".".join([PREFIX, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {name for name in names if name.startswith(PREFIX + ".") and name.count(".") == 2}
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for following in sorted(graph.get(node, ())):
            if state.get(following) == 1:
                return [*path[path.index(following) :], following]
            if following not in state and (cycle := visit(following, [*path, following])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    (tmp_path / "a.py").write_text("from attnkit.training.b import x\n")
    (tmp_path / "b.py").write_text("def f():\n    from attnkit.training import a\n")
    graph = {f"{PREFIX}.{p.stem}": imports_of(p) for p in tmp_path.glob("*.py")}
    assert find_cycle(graph) == [f"{PREFIX}.a", f"{PREFIX}.b", f"{PREFIX}.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None


def test_training_has_no_import_cycle_and_no_long_module():
    modules = {f"{PREFIX}.{path.stem}": path for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    modules |= {f"{PREFIX}.{path.parent.name}": path for path in PACKAGE.glob("*/__init__.py")}
    assert {f"{PREFIX}.loop", f"{PREFIX}._run_state", f"{PREFIX}.checkpointing"} <= set(modules)
    graph = {name: imports_of(path) & set(modules) - {name} for name, path in modules.items()}
    assert f"{PREFIX}.fit_config" in graph[f"{PREFIX}._run_state"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])
    long = {
        path.name: n for path in modules.values() if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long
