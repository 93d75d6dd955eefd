"""A library user's route to faithfulness for any ``nn.Module`` (#37): the README's worked subject runs as written,
and ``check_subject`` refuses a subject that breaks the protocol in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from attnkit.explain.faithfulness import check_subject, faithfulness_of

README = Path(__file__).resolve().parents[2] / "README.md"


def _example() -> dict:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- own-model example[^>]*-->\n```python\n(.*?)```", text, re.DOTALL)
    assert block, "the README's own-model example is missing"
    scope: dict = {}
    exec(compile(block.group(1), "README.md", "exec"), scope)
    return scope


def test_the_readme_subject_for_any_module_runs_every_method():
    scope = _example()
    result = scope["result"]
    assert {"attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random"} <= set(result.methods)
    assert result.erase == "mask" and len(result.methods["attention"].scores) == 5


def test_check_subject_refuses_logits_where_probabilities_are_expected():
    scope = _example()
    subject = scope["subject"]
    subject.probabilities = subject.probabilities.log() + 3.0  # logits, not probabilities
    with pytest.raises(ValueError, match=r"BagSubject.probabilities: expected probabilities .* logits\? apply softmax"):
        check_subject(subject)
    with pytest.raises(ValueError, match="logits"):
        faithfulness_of([subject])


def test_check_subject_refuses_a_forward_that_returns_logits():
    scope = _example()
    subject = scope["subject"]
    subject.probabilities_when = lambda keep, erase: torch.randn(len(keep), 2) * 5
    with pytest.raises(ValueError, match=r"probabilities_when: expected probabilities"):
        check_subject(subject)
    subject = scope["BagSubject"](scope["Bag"](), [5, 9], ["a", "b"], ["n", "p"])
    subject.tokens = "a b"
    with pytest.raises(ValueError, match="tokens: expected a list of str"):
        check_subject(subject)
