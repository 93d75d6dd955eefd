"""TaSc (task scaling of attention pooling): scores read from a token's own id and embedding, never from its
neighbours; padding changes nothing; the pooled vector is the weights times the scores times the states."""

import pytest
import torch
from _factories import pad_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit import AttentionPooling, ConvTaskScaling, FeatTaskScaling, LinTaskScaling
from attnkit.distributions import Entmax15, Softmax, Sparsemax

V, E = 12, 5
SCALINGS = {
    "lin": lambda: LinTaskScaling(V),
    "feat": lambda: FeatTaskScaling(V, E),
    "conv": lambda: ConvTaskScaling(V, E),
}
DISTRIBUTIONS = {"softmax": Softmax, "sparsemax": Sparsemax, "entmax15": Entmax15}
GRID = settings(max_examples=8, deadline=None)


def test_lin_and_feat_scores_by_hand():
    lin, feat = LinTaskScaling(4), FeatTaskScaling(4, 2)
    with torch.no_grad():
        lin.u.copy_(torch.tensor([0.0, 2.0, -1.0, 0.5]))
        feat.u.copy_(torch.tensor([[0.0, 0.0], [1.0, 2.0], [3.0, -1.0], [0.5, 0.5]]))
    ids = torch.tensor([[1, 2, 3]])
    embeddings = torch.tensor([[[1.0, 1.0], [2.0, 4.0], [-2.0, 6.0]]])
    mask = torch.tensor([[True, True, False]])
    # lin: u_w · (sum of the embedding's features); feat: U_w · e; padding 0
    assert lin(ids, embeddings, mask).tolist() == [[4.0, -6.0, 0.0]]
    assert feat(ids, embeddings, mask).tolist() == [[3.0, 2.0, 0.0]]


def test_the_pooling_multiplies_the_weights_by_the_scale_before_the_sum():
    torch.manual_seed(0)
    pool = AttentionPooling(3)
    x, scale = torch.randn(2, 4, 3), torch.randn(2, 4)
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    plain, scaled = pool(x, mask), pool(x, mask, scale=scale)
    torch.testing.assert_close(scaled.weights, plain.weights)  # the weights shown stay the distribution's
    expected = torch.einsum("bt,btd->bd", plain.weights[:, 0] * scale, x)
    torch.testing.assert_close(scaled.context, expected)


@pytest.mark.parametrize("name", SCALINGS)
@GRID
@given(length=st.integers(2, 8), position=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_a_words_score_does_not_change_with_its_neighbours(name, length, position, seed):
    torch.manual_seed(seed)
    scaling, table = SCALINGS[name](), torch.nn.Embedding(V, E)
    position = position % length
    ids = torch.randint(1, V, (1, length))
    other = torch.randint(1, V, (1, length))
    other[0, position] = ids[0, position]  # same word at `position`, every neighbour changed
    mask = torch.ones(1, length, dtype=torch.bool)
    with torch.no_grad():
        first = scaling(ids, table(ids), mask)[0, position]
        second = scaling(other, table(other), mask)[0, position]
    torch.testing.assert_close(first, second)


def test_a_wider_conv_reads_its_window_and_nothing_beyond():
    torch.manual_seed(0)
    scaling, table = ConvTaskScaling(V, E, kernel_size=3), torch.nn.Embedding(V, E)
    ids = torch.randint(1, V, (1, 7))
    mask = torch.ones(1, 7, dtype=torch.bool)
    far, near = ids.clone(), ids.clone()
    far[0, [0, 1, 5, 6]] = (ids[0, [0, 1, 5, 6]] % (V - 1)) + 1  # outside position 3's window [2, 4]
    near[0, 2] = ids[0, 2] % (V - 1) + 1  # inside it
    assert not torch.equal(far, ids) and not torch.equal(near, ids)
    with torch.no_grad():
        scores = [scaling(x, table(x), mask)[0, 3] for x in (ids, far, near)]
    torch.testing.assert_close(scores[0], scores[1])
    assert scores[0] != scores[2]
    with pytest.raises(ValueError, match="odd"):
        ConvTaskScaling(V, E, kernel_size=2)


@pytest.mark.parametrize("name", SCALINGS)
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@GRID
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4), extra=st.integers(0, 3), seed=st.integers(0, 2**16))
def test_scaled_pooling_ignores_padding_and_companions(name, dist, lengths, extra, seed):
    torch.manual_seed(seed)
    scaling, table = SCALINGS[name](), torch.nn.Embedding(V, E)
    pool = AttentionPooling(E, distribution=DISTRIBUTIONS[dist]()).eval()
    sequences = [torch.randint(1, V, (t,)) for t in lengths]
    states, mask = pad_batch([table(s).detach() for s in sequences], extra)  # garbage states in the padding
    ids = torch.randint(1, V, mask.shape).masked_scatter(mask, torch.cat(sequences))  # garbage ids there too
    with torch.no_grad():
        batched = pool(states, mask, scale=scaling(ids, table(ids), mask))
        for i, s in enumerate(sequences):
            alone_mask = torch.ones(1, len(s), dtype=torch.bool)
            alone = pool(table(s)[None], alone_mask, scale=scaling(s[None], table(s[None]), alone_mask))
            torch.testing.assert_close(batched.context[i], alone.context[0], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(batched.weights[i, :, : len(s)], alone.weights[0], atol=1e-6, rtol=1e-5)
            assert (batched.weights[i, :, len(s) :] == 0).all()


@pytest.mark.parametrize("name", SCALINGS)
def test_gradients_reach_the_scores_and_padding_gets_none(name):
    torch.manual_seed(0)
    scaling, table = SCALINGS[name](), torch.nn.Embedding(V, E)
    ids = torch.randint(1, V, (2, 4))
    mask = torch.tensor([[True] * 4, [True, True, False, False]])
    embeddings = table(ids)
    embeddings.retain_grad()
    scores = scaling(ids, embeddings, mask)
    assert (scores[~mask] == 0).all()
    scores.sum().backward()
    assert scaling.u.grad.abs().sum() > 0
    assert (embeddings.grad[~mask] == 0).all() and embeddings.grad[mask].abs().sum() > 0
