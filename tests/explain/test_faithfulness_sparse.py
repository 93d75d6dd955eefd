"""Rankings that mean what they say for sparse attention (#38): tied scores are ranked in a seeded random order,
not left to right; each method's support (units scored at all) is reported; a zero-weight token is never called
attended."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from _faithfulness_models import pooled_model, pooled_subject

from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import Method, MethodScores, Run
from attnkit.explain.faithfulness.metrics import ranking, support
from attnkit.explain.faithfulness.results import erasure_sentence, format_document, top_count
from attnkit.tasks.classify.attended_words import top_attended_words
from attnkit.tasks.classify.encoding import Prediction


@dataclass(frozen=True)
class LastOnly(Method):
    """A sparse method: all its weight on the last unit, every other unit exactly 0."""

    def attribute(self, run: Run) -> MethodScores:
        scores = torch.zeros(len(run.subject.tokens))
        scores[-1] = 1.0
        return MethodScores(scores)


def test_ties_are_ranked_in_a_seeded_random_order_not_left_to_right():
    scores = torch.tensor([0.0] * 30 + [1.0])
    assert ranking(scores).tolist()[:4] == [30, 0, 1, 2]  # without a generator: reading order (the reference)
    orders = [ranking(scores, generator=torch.Generator().manual_seed(seed)).tolist() for seed in range(3)]
    assert all(order[0] == 30 for order in orders)  # the scored unit first, always
    assert orders[0] == ranking(scores, generator=torch.Generator().manual_seed(0)).tolist()  # a seed repeats
    assert orders[0][1:] != list(range(30)) and len({tuple(o) for o in orders}) == 3
    assert sorted(orders[0]) == list(range(31))


def test_support_is_reported_beside_the_curves_and_a_zero_weight_token_is_not_attended():
    subject = pooled_subject(pooled_model("none"), list(range(3, 23)))  # 20 tokens
    toy = LastOnly("sparse")
    result = faithfulness_of([subject], methods=[toy, "random"], seed=0)[0]
    assert support([0.0, 0.5, 0.0, 2.0]) == 2
    assert result.methods["sparse"].support == 1 and result.methods["random"].support == 20
    assert result.to_json()["methods"]["sparse"]["support"] == 1
    table = format_document(result, 1)
    assert "support" in table.splitlines()[1]
    row = next(line for line in table.splitlines() if line.startswith("sparse"))
    assert row.rstrip().endswith("t19")  # its top tokens: the one it scores, not two zero-weight ones
    assert top_count(result, "sparse") == 1
    assert erasure_sentence(result, method="sparse").startswith("erasing the 1 top (sparse) word ")


def test_the_top_attended_words_leave_out_zero_weights():
    prediction = Prediction(text="a b c d", label="x", probabilities={"x": 1.0})
    prediction.tokens = ["a", "b", "c", "d"]
    prediction.token_weights = [[0.0, 0.75, 0.0, 0.25]]
    assert top_attended_words(prediction, 3) == ["b", "d"]
