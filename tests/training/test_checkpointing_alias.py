"""The checkpoint format moved to :mod:`attnkit.checkpointing` (#36): the old paths still import, with a warning,
and give the same objects."""

from __future__ import annotations

import importlib
import sys

import pytest

import attnkit.checkpointing
import attnkit.checkpointing.config_io
import attnkit.training


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("attnkit.training.checkpointing", attnkit.checkpointing),
        ("attnkit.training.config_io", attnkit.checkpointing.config_io),
    ],
)
def test_the_old_path_warns_and_re_exports_every_name(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new.__name__}"):
        module = importlib.import_module(old)
    assert sorted(module.__all__) == sorted(new.__all__)
    assert all(getattr(module, name) is getattr(new, name) for name in new.__all__)


def test_the_training_package_still_re_exports_the_checkpoint_api():
    assert attnkit.training.save_checkpoint is attnkit.checkpointing.save_checkpoint
    assert attnkit.training.resolve_checkpoint is attnkit.checkpointing.resolve_checkpoint
