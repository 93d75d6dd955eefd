"""The faithfulness tests on models whose answer is known: a decision resting on one token, flow and Kendall τ
by hand, integrated gradients' completeness, permutations that never weight padding, and a seed that repeats."""

from __future__ import annotations

import json
import math
from itertools import combinations

import pytest
import torch
from _faithfulness_models import GREAT, han_model, han_subject, one_token_model, pooled_model, pooled_subject
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.distributions import Uniform
from attnkit.explain.faithfulness.baselines import (
    permutation_test,
    permute_among_kept,
    permuted_attention,
    uniform_attention,
)
from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import attention_flow, residual_attention
from attnkit.explain.faithfulness.metrics import kendall_tau, kendall_taus, top_k_overlap
from attnkit.explain.faithfulness.results import erasure_sentence

pytest.importorskip("captum", reason="the gradient methods need Captum (pip install 'attnkit[faithfulness]')")


def _one_token_result(**options):
    ids = [2, 3, 4, 6, 7, GREAT, 8, 9, 2, 3, 4, 6, 7, 8, 9, 2, 3, 4, 6, 7]  # 20 tokens, "great" at 5
    subject = pooled_subject(one_token_model(), ids)
    return subject, faithfulness_of([subject], **options)[0]


def test_a_decision_resting_on_one_token_is_found_by_attention_and_not_by_random():
    subject, result = _one_token_result(seed=0)
    p = float(subject.probabilities[1])
    assert result.label == "great" and p > 0.999
    attention = result.methods["attention"]
    assert max(range(20), key=lambda i: attention.scores[i]) == 5
    for k in ("1", "5", "10", "20", "50"):  # the top 1 % is one token: "great" itself
        assert attention.comprehensiveness[k] == pytest.approx(p, abs=1e-3)
        assert attention.sufficiency[k] == pytest.approx(0.0, abs=1e-3)  # "great" alone suffices
    assert attention.flip_fraction == pytest.approx(1 / 20)
    random = result.methods["random"]
    assert random.scores[5] != max(random.scores)  # seed 0 does not pick "great" first
    assert random.comprehensiveness["1"] == pytest.approx(0.0, abs=1e-3)
    for name in ("integrated_gradients", "gradient_x_input", "leave_one_out"):
        assert result.methods[name].comprehensiveness["1"] == pytest.approx(p, abs=1e-3), name
    assert erasure_sentence(result) == (
        f"erasing the 3 most-attended words lowers p(great) from {p:.2f} to 0.00; 3 random words: {p:.2f}"
    )


def test_results_repeat_under_a_seed_and_change_with_it():
    first = _one_token_result(seed=3)[1].to_json()
    again = _one_token_result(seed=3)[1].to_json()
    other = _one_token_result(seed=4)[1].to_json()
    assert json.dumps(first) == json.dumps(again)
    assert first["methods"]["random"]["scores"] != other["methods"]["random"]["scores"]
    assert first["methods"]["attention"] == other["methods"]["attention"]


def test_the_json_has_the_issue_schema():
    result = _one_token_result()[1].to_json()
    assert list(result) == ["text", "label", "probability", "tokens", "methods", "kendall_tau"]
    assert set(result["methods"]) == {
        "attention",
        "gradient_x_input",
        "integrated_gradients",
        "leave_one_out",
        "random",
    }
    keys = ["scores", "comprehensiveness", "sufficiency", "aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction"]
    assert list(result["methods"]["attention"]) == [*keys, "support"]
    assert list(result["methods"]["integrated_gradients"]) == [
        *keys,
        "convergence_delta",
        "steps",
        "converged",
        "support",
    ]
    assert list(result["methods"]["attention"]["comprehensiveness"]) == ["1", "5", "10", "20", "50"]
    assert len(result["methods"]["random"]["scores"]) == len(result["tokens"]) == 20
    assert "attention|random" in result["kendall_tau"] and len(result["kendall_tau"]) == 10


def _tau_by_hand(a, b):
    """Kendall's τ-b from its definition: (concordant - discordant) / sqrt((n0 - ties_a)(n0 - ties_b))."""
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            ties_a += da == 0
            ties_b += db == 0
            concordant += da * db > 0
            discordant += da * db < 0
    pairs = n * (n - 1) / 2
    return (concordant - discordant) / math.sqrt((pairs - ties_a) * (pairs - ties_b))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=12))
def test_kendall_tau_equals_its_definition_and_scipys(pairs):
    a, b = [float(x) for x, _ in pairs], [float(y) for _, y in pairs]
    tau = kendall_tau(a, b)
    if len(set(a)) < 2 or len(set(b)) < 2:
        assert math.isnan(tau)
    else:
        assert tau == pytest.approx(_tau_by_hand(a, b), abs=1e-12)


def test_every_pair_of_methods_gets_scipys_tau_and_the_top_k_overlap():
    from scipy.stats import kendalltau

    subject = pooled_subject(pooled_model("transformer"), list(range(2, 24)))
    result = faithfulness_of([subject], methods=["attention", "rollout", "flow", "leave_one_out", "random"])[0]
    assert set(result.methods) == {"attention", "rollout", "flow", "leave_one_out", "random"}
    for pair, tau in result.kendall_tau.items():
        a, b = pair.split("|")
        assert tau == pytest.approx(kendalltau(result.methods[a].scores, result.methods[b].scores).statistic)
    assert top_k_overlap([3, 2, 1, 0], [3, 0, 2, 1], 2) == 0.5
    assert top_k_overlap([3, 2, 1, 0], [3, 2, 0, 1], 2) == 1.0


def test_integrated_gradients_is_complete():
    """IG's attributions sum to p(x) - p(0): the convergence delta is small at 32 steps, and the sum over
    tokens matches the two forwards computed here."""
    model = pooled_model("bigru")
    subject = pooled_subject(model, [4, 9, 17, 3, 22, 8, 5])
    result = faithfulness_of([subject], methods=["integrated_gradients"], steps=32)[0]
    found = result.methods["integrated_gradients"]
    assert found.convergence_delta < 1e-3
    inputs = subject.gradient_inputs()
    with torch.no_grad():
        full = inputs.forward(inputs.embeddings)[0, subject.label]
        empty = inputs.forward(torch.zeros_like(inputs.embeddings))[0, subject.label]
    assert sum(found.scores) == pytest.approx(float(full - empty), abs=1e-3)
    han = han_subject(han_model(), [[4, 5, 6], [], [7, 8]])
    delta = faithfulness_of([han], methods=["integrated_gradients"])[0].methods["integrated_gradients"]
    assert delta.convergence_delta < 1e-3 and len(delta.scores) == 5


def test_convergence_delta_equals_captums():
    """The delta computed from one forward of both path ends is Captum's ``return_convergence_delta``, at a step
    count coarse enough for the delta to be far from zero."""
    from captum.attr import IntegratedGradients

    from attnkit.explain.faithfulness.gradients import integrated_gradients

    subject = pooled_subject(pooled_model("bigru"), [4, 9, 17, 3, 22, 8, 5])
    inputs = subject.gradient_inputs()
    ours = integrated_gradients(inputs, subject.label, steps=2)
    _, captums = IntegratedGradients(inputs.forward).attribute(
        inputs.embeddings.clone(),
        baselines=torch.zeros_like(inputs.embeddings),
        target=subject.label,
        n_steps=2,
        return_convergence_delta=True,
    )
    assert ours.convergence_delta == pytest.approx(float(captums.abs().max()), rel=1e-4, abs=1e-7)


def test_flow_through_one_layer_is_the_min_of_edge_and_output_capacity():
    weights = torch.softmax(torch.randn(2, 4, 4, generator=torch.Generator().manual_seed(0)), -1)  # [H, T, T]
    output = torch.tensor([0.1, 0.5, 0.3, 0.1])
    layer = residual_attention(weights)  # [T, T]
    expected = torch.minimum(layer, output[:, None]).sum(0)  # flow_j = sum_i min(Â[i, j], w_i)
    torch.testing.assert_close(attention_flow([weights], output), expected, atol=1e-5, rtol=0)
    two = attention_flow([weights, weights], output)
    assert (two <= output.sum() + 1e-6).all() and (two > 0).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 9), st.integers(0, 2**16))
def test_permutations_never_give_padding_weight(rows, length, seed):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.rand(rows, 2, length, generator=generator)  # [B, H, T]
    mask = torch.rand(rows, 1, length, generator=generator) > 0.4  # [B, 1, T]
    weights = weights * mask
    shuffled = permute_among_kept(weights, mask, generator)
    assert (shuffled[~mask.expand_as(weights)] == 0).all()
    torch.testing.assert_close(shuffled.sort(-1).values, weights.sort(-1).values)


def test_the_permutation_test_shuffles_real_words_only_and_repeats_under_a_seed():
    model = han_model()
    subject = han_subject(model, [[4, 5, 6], [7, 8], [9]])
    seen = []
    hook = model.word_pooling.register_forward_hook(lambda m, i, out: seen.append((out.weights, i[1])))
    first = permutation_test(subject, n=16, seed=0)
    hook.remove()
    weights, mask = seen[-1]
    assert weights.shape[0] == 16 * 3 and (weights[:, 0][~mask] == 0).all()
    assert first == permutation_test(subject, n=16, seed=0)
    assert 0 <= first.median_tvd <= 1 and 0 <= first.flipped <= 1
    assert permutation_test(pooled_subject(pooled_model("none"), [4, 5]), n=4) is not None
    with permuted_attention(torch.nn.Linear(2, 2), torch.Generator()) as count:
        assert count == 0


def test_uniform_attention_weighs_every_real_token_alike():
    weights = Uniform()(torch.randn(2, 1, 4), torch.tensor([[[True, True, False, False]], [[False] * 4]]))
    assert weights.tolist() == [[[0.5, 0.5, 0.0, 0.0]], [[0.0] * 4]]
    model = pooled_model("none")
    with uniform_attention(model) as count, torch.no_grad():
        out = model(torch.tensor([[4, 5, 6, 0]]), torch.tensor([[True, True, True, False]]))
    assert count == 1
    torch.testing.assert_close(out.pooling.weights[0, 0], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0.0]))
    assert not isinstance(model.pooling.distribution, Uniform)  # restored


def test_data_set_means_average_the_documents():
    from attnkit.explain.faithfulness.metrics import method_means, permutation_summary
    from attnkit.explain.faithfulness.results import PermutationResult

    subjects = [pooled_subject(one_token_model(), ids) for ids in ([2, GREAT, 3, 4], [GREAT, 6, 7, 8, 9, 2])]
    results = faithfulness_of(subjects, methods=["attention", "leave_one_out", "random"])
    means = method_means(results)
    expected = sum(r.methods["attention"].aopc_comprehensiveness for r in results) / 2
    assert means["attention"]["aopc_comprehensiveness"] == pytest.approx(expected)
    assert means["leave_one_out"]["tau_leave_one_out"] == 1.0 and means["random"]["documents"] == 2
    tests = [PermutationResult(10, 0.2, 0.1), None, PermutationResult(10, 0.4, 0.3)]
    assert permutation_summary(tests) == {
        "median_tvd": pytest.approx(0.3),
        "flipped": pytest.approx(0.2),
        "documents": 2,
    }


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.integers(2, 300), st.sampled_from([3, 50, None]))
def test_kendall_taus_of_every_pair_equal_scipys(seed, units, levels):
    from scipy.stats import kendalltau

    generator = torch.Generator().manual_seed(seed)
    draw = (
        (lambda: torch.rand(units, generator=generator))
        if levels is None
        else (lambda: torch.randint(levels, (units,), generator=generator).float())
    )
    scores = {name: draw() for name in ("attention", "leave_one_out", "random")}
    scores["constant"] = torch.ones(units)
    taus = kendall_taus(scores)
    assert list(taus) == [f"{a}|{b}" for a, b in combinations(scores, 2)]
    for pair, tau in taus.items():
        a, b = pair.split("|")
        expected = kendalltau(scores[a].tolist(), scores[b].tolist()).statistic
        if math.isnan(expected):
            assert math.isnan(tau)
        else:
            assert tau == pytest.approx(expected, abs=1e-12)


def test_flow_takes_a_batch_as_rollout_does_each_example_over_its_real_tokens():
    """attention_flow on [B, H, T, T] layers, [B, T] output weights and a key_mask equals the flow of each example
    alone over its real tokens, with 0 at padding (the shapes attention_rollout takes, #37)."""
    import torch

    from attnkit.explain.faithfulness.methods import attention_flow

    generator = torch.Generator().manual_seed(0)
    layers = [torch.rand(2, 2, 4, 4, generator=generator).softmax(-1) for _ in range(2)]  # per layer [B, H, T, T]
    output = torch.rand(2, 4, generator=generator).softmax(-1)  # [B, T]
    key_mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    batched = attention_flow(layers, output, key_mask=key_mask)  # [B, T]
    assert batched.shape == (2, 4) and batched[1, 3] == 0
    first = attention_flow([w[0] for w in layers], output[0])
    second = attention_flow([w[1][:, :3, :3] for w in layers], output[1, :3])
    torch.testing.assert_close(batched[0], first)
    torch.testing.assert_close(batched[1, :3], second)
    with pytest.raises(ValueError, match="key_mask"):
        attention_flow([w[0] for w in layers], output[0], key_mask=key_mask[0])


def test_scaled_attention_is_attention_times_the_task_scores_and_only_for_tasc_models():
    """|attention x s| for a model with TaSc (the weights its pooling multiplies the states by); no such method
    for a model without, which the method then skips."""
    from attnkit.models import PooledClassifier
    from attnkit.models.encoders import BiGRUEncoder
    from attnkit.pooling import LinTaskScaling
    from attnkit.tasks.classify.faithfulness import PooledSubject, task_scaled

    plain = pooled_model("bigru")
    assert "scaled_attention" not in pooled_subject(plain, [3, 4, 5]).attention_scores()
    torch.manual_seed(0)
    scaled = PooledClassifier(
        40, 3, embed_dim=16, encoder=BiGRUEncoder(16, 8), dropout=0.0, task_scaling=LinTaskScaling(40)
    ).eval()
    subject = pooled_subject(scaled, [3, 4, 5, 6])
    scores = subject.attention_scores()
    ids = torch.tensor([[3, 4, 5, 6]])
    s = scaled.task_scaling(ids, scaled.embedding(ids), torch.ones_like(ids, dtype=torch.bool))[0]
    assert (s.abs() > 0).all() and not torch.allclose(s.abs(), torch.ones_like(s))  # scores that change something
    torch.testing.assert_close(scores["scaled_attention"], (scores["attention"] * s).abs().detach())
    assert isinstance(subject, PooledSubject) and task_scaled(plain, ids[0], scores["attention"]) == {}
