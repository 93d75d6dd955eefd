"""``attnkit faithfulness`` on a vision checkpoint (the shipped ``digits`` model) through the command line, and the
deletion / insertion AUC over grid cells on a case worked out by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest
import torch

pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")

SRC = str(Path(__file__).resolve().parents[3] / "src")


def _attnkit(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "attnkit.cli", *argv], capture_output=True, text=True, env=env, timeout=600
    )


def test_json_per_test_image_with_deletion_and_insertion_auc():
    done = _attnkit("faithfulness", "--checkpoint", "digits", "--index", "0", "--index", "3", "--json",
                    "--steps", "4", "--threads", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["text"] for line in lines] == ["digits test image 0", "digits test image 3"]
    first = lines[0]
    assert list(first) == ["text", "label", "probability", "tokens", "methods", "kendall_tau"]
    assert first["tokens"][:2] == ["r0c0", "r0c1"] and len(first["tokens"]) == 64
    assert set(first["methods"]) == {"attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random"}
    for found in first["methods"].values():
        assert len(found["scores"]) == 64
        assert 0.0 <= found["deletion_auc"] <= 1.0 and 0.0 <= found["insertion_auc"] <= 1.0
        assert list(found["comprehensiveness"]) == ["1", "5", "10", "20", "50"]


def test_the_table_and_the_one_line_errors():
    done = _attnkit("faithfulness", "--checkpoint", "digits", "--index", "1", "--methods", "attention,random",
                    "--threads", "1")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("image 1") and "deletion AUC" in done.stdout and "insertion AUC" in done.stdout
    for argv, message in [
        (["--checkpoint", "digits", "--text", "a digit"], "--text is for text checkpoints"),
        (["--checkpoint", "digits", "--index", "100000"], "out of range"),
        (["--checkpoint", "r8", "--index", "0"], "--index: an option of the vision task, not of classify checkpoints"),
    ]:
        failed = _attnkit("faithfulness", *argv)
        assert failed.returncode == 2, failed.stderr
        assert failed.stdout == "" and failed.stderr.count("\n") == 1, failed.stderr
        assert failed.stderr.startswith("attnkit: error: ") and message in failed.stderr


class _Counting:
    """A hand-built "model": p(class 1) = 0.1 + 0.2 · (cells kept among the first four, of eight)."""

    tokens: ClassVar[list[str]] = [f"c{i}" for i in range(8)]
    label = 1

    def probabilities_when(self, keep: torch.Tensor, erase: str) -> torch.Tensor:
        p = 0.1 + 0.2 * keep[:, :4].sum(1).double()  # [N]
        return torch.stack([1 - p, p], dim=1)


def test_deletion_and_insertion_auc_by_hand():
    """Ranking the four cells that matter first: deleting them takes p from 0.9 down by 0.2 a step over the first
    half, then flat at 0.1: AUC = (½·(0.9 + 0.1)·4 + 0.1·4) / 8 = 0.3; inserting them: 0.1 rising to 0.9, then
    flat: (½·(0.1 + 0.9)·4 + 0.9·4) / 8 = 0.7. The reverse order swaps the halves: 0.7 and 0.3."""
    from attnkit.tasks.vision.faithfulness import curve_auc, deletion_insertion_auc

    good = [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    assert deletion_insertion_auc(_Counting(), good) == pytest.approx((0.3, 0.7))
    assert deletion_insertion_auc(_Counting(), good[::-1]) == pytest.approx((0.7, 0.3))
    assert curve_auc(torch.tensor([1.0, 0.0])) == 0.5
    with pytest.raises(ValueError, match="at least two points"):
        curve_auc(torch.tensor([1.0]))
