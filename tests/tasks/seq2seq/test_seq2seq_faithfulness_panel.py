"""``attnkit explain --faithfulness`` on a seq2seq checkpoint: each text's emitted tokens' tests averaged into the
classifiers' panel (curves against random, one plain sentence), and that average worked out by hand."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.explain.faithfulness.results import (
    EMITTED,
    DocumentFaithfulness,
    MethodResult,
    erasure_sentence,
    mean_over_steps,
)

SRC = str(Path(__file__).resolve().parents[3] / "src")


def _step(p: float, after: float, tau: float, scores: list[float]) -> DocumentFaithfulness:
    found = MethodResult(
        scores=scores, comprehensiveness={"1": p - after}, sufficiency={"1": 0.1}, aopc_comprehensiveness=p - after,
        aopc_sufficiency=0.1, flip_fraction=0.5, erased_probability=[after], kept_probability=[p - 0.1], counts=[1],
        top_probability={1: after},
    )  # fmt: skip
    return DocumentFaithfulness(
        text="ab", label="X", probability=p, tokens=["a", "b"], erase="delete",
        methods={"attention": found, "random": found}, kendall_tau={"attention|random": tau}, top_k_overlap={},
    )  # fmt: skip


def test_the_mean_over_steps_by_hand():
    """Two steps: p 0.9 and 0.5, 0.3 and 0.1 after erasing the top letter, τ 0.5 and undefined -> p 0.7,
    after 0.2, comprehensiveness 0.5 (= 0.7 - 0.2), scores averaged per letter, τ 0.5 (the undefined one left out)."""
    mean = mean_over_steps([_step(0.9, 0.3, 0.5, [1.0, 0.0]), _step(0.5, 0.1, math.nan, [0.0, 0.5])], text="ab")
    assert mean.label == EMITTED and mean.tokens == ["a", "b"] and mean.text == "ab"
    assert mean.probability == pytest.approx(0.7)
    attention = mean.methods["attention"]
    assert attention.top_probability[1] == pytest.approx(0.2)
    assert attention.comprehensiveness["1"] == pytest.approx(0.5) and attention.scores == [0.5, 0.25]
    assert mean.kendall_tau["attention|random"] == pytest.approx(0.5)
    assert erasure_sentence(mean, count=1) == (
        f"erasing the 1 most-attended word lowers p({EMITTED}) from 0.70 to 0.20; 1 random word: 0.20"
    )
    other = _step(0.9, 0.3, 0.5, [1.0, 0.0])
    other.tokens = ["a", "c"]
    with pytest.raises(ValueError, match="different sources"):
        mean_over_steps([_step(0.9, 0.3, 0.5, [1.0, 0.0]), other], text="ab")
    with pytest.raises(ValueError, match="no steps"):
        mean_over_steps([], text="ab")


def test_explain_faithfulness_on_the_shipped_g2p_model(tmp_path):
    pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    page = tmp_path / "report.html"
    argv = ["explain", "--checkpoint", "g2p", "--text", "phone", "--text", "cat", "--faithfulness", "--out", str(page)]
    done = subprocess.run(
        [sys.executable, "-m", "attnkit.cli", *argv, "--threads", "1"], capture_output=True, text=True, env=env,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert html.count('<div class="attn-faithfulness">') == 2
    assert f"p({EMITTED}) from" in html and "random letter" not in html and "random word" in html
    assert html.count('class="attn-figure attn-faithfulness-curves"') == 2
    masked = subprocess.run(
        [sys.executable, "-m", "attnkit.cli", *argv, "--erase", "mask"], capture_output=True, text=True, env=env,
        timeout=600,
    )  # fmt: skip
    assert masked.returncode == 2 and masked.stderr.startswith("attnkit: error: ")
    assert masked.stderr.count("\n") == 1 and "--erase mask" in masked.stderr
