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


# ----------------------------------------------------------- numbers you can trust by default (#37 item 5)


def test_integrated_gradients_double_their_steps_until_the_delta_is_within_tolerance():
    from attnkit.explain.faithfulness.gradients import GradientScores
    from attnkit.explain.faithfulness.methods import METHODS, STEPS_CAP, within_tolerance

    assert within_tolerance(GradientScores(torch.zeros(1), 0.04, 1.0))
    assert not within_tolerance(GradientScores(torch.zeros(1), 0.06, 1.0))
    assert within_tolerance(GradientScores(torch.zeros(1), 5e-4, 0.0))  # no change along the path: the floor
    subject = pooled_subject(pooled_model("bigru", seed=2), list(range(3, 15)))
    found = faithfulness_of([subject], methods=["integrated_gradients"], steps=1)[0].methods["integrated_gradients"]
    assert found.steps >= 1 and found.steps <= STEPS_CAP
    if found.converged:
        change = abs(float(subject.probabilities[subject.label]) - _p_at_zero(subject))
        assert found.convergence_delta <= max(0.05 * change, 1e-3)
    else:  # the cap was reached: the figure says so
        assert found.steps == STEPS_CAP and "NOT within" in format_document(
            faithfulness_of([subject], methods=["integrated_gradients"])[0], 1
        )
    assert METHODS["integrated_gradients"].integrated


def _p_at_zero(subject) -> float:
    inputs = subject.gradient_inputs()
    with torch.no_grad():
        return float(inputs.forward(torch.zeros_like(inputs.embeddings))[0, subject.label])


def test_the_random_floor_is_a_mean_over_ten_draws_with_its_spread():
    from attnkit.explain.faithfulness.methods import RANDOM_DRAWS

    subject = pooled_subject(pooled_model("none"), list(range(3, 23)))
    found = faithfulness_of([subject], methods=["random"], seed=4)[0].methods["random"]
    assert RANDOM_DRAWS >= 10
    assert found.extra["aopc_comprehensiveness_sd"] >= 0.0 and "aopc_sufficiency_sd" in found.extra
    again = faithfulness_of([subject], methods=["random"], seed=4)[0].methods["random"]
    assert again.aopc_comprehensiveness == found.aopc_comprehensiveness  # a seed repeats
    one = torch.Generator().manual_seed(4)
    first = torch.rand(20, generator=one)
    assert found.scores == first.tolist()  # the scores shown: the first draw
