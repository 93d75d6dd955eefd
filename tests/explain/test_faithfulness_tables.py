"""How to add a faithfulness method or an erasure: one class and one line in its table (``METHODS``,
``ERASURES``). A toy method and a toy erasure added here run through every subject family, the command line's
names and the results, with nothing else touched."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from _faithfulness_models import GREAT, han_model, han_subject, one_token_model, pooled_model, pooled_subject

from attnkit.explain.faithfulness import erasure as erasures
from attnkit.explain.faithfulness import methods as methods_module
from attnkit.explain.faithfulness.erasure import ERASURES, Erased, Erasure, as_erasure
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import METHODS, Method, MethodScores, Run, as_methods

# ------------------------------------------------------------------------------ a toy method: the units' position


@dataclass(frozen=True)
class LastFirst(Method):
    """Later units score higher (a method with no model in it)."""

    def attribute(self, run: Run) -> MethodScores:
        return MethodScores(torch.arange(len(run.subject.tokens), dtype=torch.float32))


# ------------------------------------------------------------------------ a toy erasure: blank and out of attention


@dataclass(frozen=True)
class BlankAndMask(Erasure):
    """The erased unit becomes the unknown token and is masked out of every attention."""

    def erase(self, values: torch.Tensor, keep: torch.Tensor, *, blank: int) -> Erased:
        return Erased(values.masked_fill(~keep, blank), torch.ones_like(keep), keep)


@pytest.fixture
def toy_tables(monkeypatch):
    monkeypatch.setitem(METHODS, "last_first", LastFirst("last_first", "later units first"))
    monkeypatch.setitem(ERASURES, "blank_mask", BlankAndMask("blank_mask", "[UNK] and out of attention"))


def test_a_method_added_to_the_table_is_offered_by_name_and_measured(toy_tables):
    assert [m.name for m in as_methods(["last_first", "attention"])] == ["attention", "last_first"]
    subject = pooled_subject(pooled_model("bigru"), [3, 4, 5, 6, 7, 8])
    result = faithfulness_of([subject], methods=["last_first", "random"])[0]
    assert list(result.methods) == ["random", "last_first"]  # the table's order
    assert result.methods["last_first"].scores == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert "random|last_first" in result.kendall_tau


def test_a_method_object_needs_no_table_line():
    subject = pooled_subject(pooled_model("none"), [3, 4, 5, 6])
    toy = LastFirst("mine")
    assert as_methods([toy, "attention"]) == [METHODS["attention"], toy]
    assert faithfulness_of([subject], methods=[toy])[0].methods["mine"].scores == [0.0, 1.0, 2.0, 3.0]


def test_an_erasure_added_to_the_table_runs_on_every_family(toy_tables):
    assert as_erasure("blank_mask") is ERASURES["blank_mask"]
    keep = torch.tensor([[True, False, True, True], [False, True, True, False]])
    ids = [[3, 4], [5, 6]]
    for subject in (pooled_subject(pooled_model("transformer"), [3, 4, 5, 6]), han_subject(han_model(), ids)):
        toy = subject.probabilities_when(keep, "blank_mask")  # [2, C]
        unk = subject.probabilities_when(keep, "unk")
        torch.testing.assert_close(toy.sum(-1), torch.ones(2))
        assert not torch.allclose(toy, unk)  # the masking also acted
    result = faithfulness_of([pooled_subject(one_token_model(), [2, 3, GREAT, 4])], erase="blank_mask")[0]
    assert result.erase == "blank_mask" and result.methods["attention"].comprehensiveness["50"] > 0.99


def test_unknown_names_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="choose from delete, mask, unk"):
        as_erasure("drop")
    with pytest.raises(ValueError, match="unknown method"):
        as_methods(["attention", "saliency"])


def test_nothing_past_the_command_line_compares_a_method_or_erasure_name():
    """The names are read by as_methods / as_erasure; the tables' modules and the subjects hold no name switch."""
    import attnkit

    root = __import__("pathlib").Path(attnkit.__file__).parent
    names = [*METHODS, *ERASURES]
    hits = []
    for path in [*root.glob("explain/faithfulness/*.py"), *root.glob("tasks/*/faithfulness*.py")]:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for name in names:
                if f'== "{name}"' in line or f'!= "{name}"' in line or f'in ("{name}"' in line:
                    hits.append(f"{path.name}:{number}: {line.strip()}")
    assert hits == []
    assert erasures.ERASURES is ERASURES and methods_module.METHODS is METHODS
