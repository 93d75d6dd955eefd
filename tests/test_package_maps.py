"""Every package whose ``__init__`` carries a module map (a ``| module | holds |`` table) lists all its modules and
subpackages, and nothing that is not there: the map is how a newcomer finds a file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "attnkit"
MAPPED = sorted(path.parent for path in SOURCE.rglob("__init__.py") if "| module | holds |" in path.read_text())


def dotted(package: Path, source: Path = SOURCE) -> str:
    return ".".join(package.relative_to(source.parent).parts)


def members(package: Path, source: Path = SOURCE) -> set[str]:
    """``attnkit.x.y`` for each module and subpackage directly inside ``package``."""
    modules = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    subpackages = {path.parent.name for path in package.glob("*/__init__.py")}
    return {f"{dotted(package, source)}.{name}" for name in modules | subpackages}


def listed(package: Path) -> set[str]:
    """The modules the map names (its first column), whole dotted paths."""
    text = (package / "__init__.py").read_text()
    return set(re.findall(r"^\| :mod:`~?([\w.]+)` \|", text, re.MULTILINE))


def test_the_maps_cover_the_task_and_training_packages():
    names = {dotted(package) for package in MAPPED}
    expected = {"attnkit.tasks.classify", "attnkit.tasks.seq2seq", "attnkit.tasks.vision", "attnkit.training"}
    assert expected | {"attnkit.tasks.seq2seq.ctranslate2", "attnkit.checkpointing"} <= names


@pytest.mark.parametrize("package", MAPPED, ids=lambda package: dotted(package))
def test_a_package_map_lists_every_module_it_holds(package):
    assert listed(package) == members(package)


def test_a_missing_module_is_caught(tmp_path):
    package = tmp_path / "attnkit" / "demo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""x\n\n| module | holds |\n|---|---|\n| :mod:`~attnkit.demo.a` | a |\n"""\n')
    (package / "a.py").write_text("")
    (package / "b.py").write_text("")
    assert members(package, tmp_path / "attnkit") - listed(package) == {"attnkit.demo.b"}
