"""Greedy and beam search: cached == recomputed decoding, beam 1 == greedy, sorted normalised scores, stopping at
<eos>, exact agreement with brute-force enumeration, batched == one source at a time."""

import itertools
import math

import pytest
import torch

from attnkit.decoding import DecodeOutput, Recompute, StepwiseSeq2Seq, beam_search, greedy
from attnkit.models.ensemble import Seq2SeqEnsemble, mean_distribution_log
from attnkit.models.rnn_seq2seq import build_rnn_seq2seq
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq

PAD, BOS, EOS = 0, 1, 2
VOCAB = 13


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def transformer(**options):
    torch.manual_seed(0)
    return build_transformer_seq2seq(
        VOCAB, VOCAB, dim=16, heads=2, encoder_layers=1, decoder_layers=2, **options
    ).eval()


def rnn(attention="luong-general", cell="gru"):
    torch.manual_seed(0)
    model = build_rnn_seq2seq(VOCAB, VOCAB, attention=attention, cell=cell, embed_dim=8, hidden_dim=12)
    return model.eval()


MODELS = {
    "transformer": transformer,
    "transformer-rotary-postnorm": lambda: transformer(positions="rotary", norm_first=False),
    "rnn-luong": rnn,
    "rnn-local-p-lstm": lambda: rnn("local-p", "lstm"),
    "rnn-bahdanau": lambda: rnn("bahdanau"),
    "rnn-none": lambda: rnn("none"),
}


def sources(lengths=(5, 2, 7, 1), seed=3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (len(lengths), max(lengths)), generator=g)
    return ids, torch.arange(max(lengths)) < torch.tensor(lengths)[:, None]


class BigramToy:
    """A hand-made StepwiseSeq2Seq: next-token log-probabilities depend on (source row, step, last token) only.

    ``<pad>`` and ``<bos>`` are impossible; optionally ``<eos>`` is forced at ``eos_step`` for every row.
    Counts the decoding steps it is asked for.
    """

    def __init__(self, batch, vocab=5, max_steps=8, eos_step=None, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.table = torch.randn(batch, max_steps, vocab, vocab, generator=g) * 2  # [B, t, last, next]
        self.table[..., [PAD, BOS]] = float("-inf")
        if eos_step is not None:
            self.table[:, eos_step] = float("-inf")
            self.table[:, eos_step, :, EOS] = 0.0
        self.steps = 0

    def start_decoding(self, source_ids, source_mask, *, beams=1, max_steps):
        rows = torch.arange(source_ids.shape[0]).repeat_interleave(beams)
        return {"rows": rows, "t": 0, "beams": beams}

    def decode_step(self, tokens, state, *, need_weights=False):
        self.steps += 1
        logits = self.table[state["rows"], state["t"], tokens]  # [N, V]
        state["t"] += 1
        weights = torch.full((tokens.shape[0], 3), float(state["t"])) if need_weights else None
        return logits, weights

    def reorder_state(self, state, indices):
        assert (indices // state["beams"] == torch.arange(len(indices)) // state["beams"]).all()
        state["rows"] = state["rows"][indices]

    def log_prob(self, row, sequence):
        """log P(sequence) for source ``row``, by the chain rule."""
        total, last = 0.0, BOS
        for t, token in enumerate(sequence):
            total += float(torch.log_softmax(self.table[row, t, last], -1)[token])
            last = token
        return total


def assert_same_hypotheses(a: DecodeOutput, b: DecodeOutput, *, atol=1e-5):
    assert torch.equal(a.tokens, b.tokens)
    assert torch.equal(a.lengths, b.lengths) and torch.equal(a.finished, b.finished)
    torch.testing.assert_close(a.scores, b.scores, atol=atol, rtol=1e-5)
    torch.testing.assert_close(a.log_probs, b.log_probs, atol=atol, rtol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_cached_decoding_equals_recomputing_the_prefix_every_step(name):
    model = MODELS[name]()
    source, mask = sources()
    assert isinstance(model, StepwiseSeq2Seq)
    assert_same_hypotheses(greedy(model, source, mask, max_len=9), greedy(Recompute(model), source, mask, max_len=9))
    assert_same_hypotheses(
        beam_search(model, source, mask, beam_size=3, max_len=9),
        beam_search(Recompute(model), source, mask, beam_size=3, max_len=9),
    )


CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA not available: the cuda variant runs on a machine with a GPU"
)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA), "meta-default"])
@pytest.mark.parametrize("name", ["transformer", "rnn-luong"])
def test_cached_decoding_equals_recomputation_on_device(name, device):
    """On CUDA when there is one; ``meta-default`` runs on the CPU with the default device set to ``meta``, so any
    tensor decoding makes without ``device=`` would break it."""
    model, (source, mask) = MODELS[name](), sources()
    target = "cpu" if device == "meta-default" else device
    model, source, mask = model.to(target), source.to(target), mask.to(target)
    expected = greedy(Recompute(model), source, mask, max_len=9), beam_search(Recompute(model), source, mask, max_len=9)
    with torch.device("meta") if device == "meta-default" else torch.device(target):
        cached = greedy(model, source, mask, max_len=9), beam_search(model, source, mask, max_len=9)
    for got, want in zip(cached, expected, strict=True):
        assert got.tokens.device == source.device
        assert_same_hypotheses(got, want)


@pytest.mark.parametrize("tie_output", [True, False])
@pytest.mark.parametrize("positions", ["sinusoidal", "rotary"])
def test_transformer_decoding_without_padding_skips_the_memory_mask_and_equals_recomputation(positions, tie_output):
    model = transformer(positions=positions, tie_output=tie_output)
    source, _ = sources()
    full = torch.ones_like(source, dtype=torch.bool)  # no padding: the steps attend without a mask
    state = model.start_decoding(source, full, beams=2, max_steps=4)
    output_t = state.output_weight_t if state.fast is None else state.fast.output.weight_t  # rotary: the modules' path
    assert state.step_memory_mask is None and output_t.shape == (16, VOCAB)
    assert (state.fast is None) == (positions == "rotary")
    assert model.start_decoding(*sources(), max_steps=4).step_memory_mask is not None
    assert_same_hypotheses(greedy(model, source, full, max_len=9), greedy(Recompute(model), source, full, max_len=9))
    assert_same_hypotheses(
        beam_search(model, source, full, beam_size=3, max_len=9),
        beam_search(Recompute(model), source, full, beam_size=3, max_len=9),
    )


def test_transformer_decode_step_logits_equal_the_output_layer():
    model = transformer()
    source, mask = sources()
    state = model.start_decoding(source, mask, max_steps=3)
    tokens = torch.full((source.shape[0],), BOS)
    logits, _ = model.decode_step(tokens, state)
    expected = model(source, mask, tokens[:, None]).logits[:, 0]  # the teacher-forced path, nn.Linear output
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_beam_size_one_equals_greedy(name):
    model = MODELS[name]()
    source, mask = sources()
    g = greedy(model, source, mask, max_len=9, length_penalty=0.6, need_weights=True)
    b = beam_search(model, source, mask, beam_size=1, max_len=9, length_penalty=0.6, need_weights=True)
    assert torch.equal(g.tokens, b.tokens) and torch.equal(g.lengths, b.lengths)
    assert torch.equal(g.scores, b.scores) and torch.equal(g.log_probs, b.log_probs)  # exactly
    if "none" in name:  # the no-attention baseline has no weights to give
        assert g.attention is None and b.attention is None
    else:
        torch.testing.assert_close(g.attention, b.attention)


def test_toy_beam_one_equals_greedy_and_greedy_pads_after_eos():
    toy = BigramToy(batch=6, vocab=6, max_steps=7, seed=1)
    source, mask = sources((3,) * 6)
    g = greedy(toy, source, mask, max_len=7)
    b = beam_search(toy, source, mask, beam_size=1, max_len=7)
    assert_same_hypotheses(g, b, atol=0)
    for row, length, finished in zip(g.best, g.lengths[:, 0], g.finished[:, 0], strict=True):
        if finished:
            assert row[length - 1] == EOS and (row[length:] == PAD).all() and (row[: length - 1] != EOS).all()
        else:
            assert length == 7 and (row != EOS).all()


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0])
def test_beam_search_equals_brute_force_enumeration(length_penalty):
    """With a beam as wide as the hypothesis space, beam search must return every hypothesis, exactly ranked."""
    vocab, max_len, batch = 5, 3, 2  # tokens eos, 3, 4 -> 1 + 2 + 4 finished and 8 cut sequences per source
    toy = BigramToy(batch=batch, vocab=vocab, max_steps=max_len, seed=2)
    source, mask = sources((2, 2))
    out = beam_search(toy, source, mask, beam_size=16, max_len=max_len, length_penalty=length_penalty)
    for row in range(batch):
        expected = []
        for n in range(1, max_len + 1):
            for body in itertools.product([3, 4], repeat=n - 1):
                finished = (*body, EOS)
                expected.append((toy.log_prob(row, finished) / n**length_penalty, finished, True))
            if n == max_len:
                for cut in itertools.product([3, 4], repeat=n):
                    expected.append((toy.log_prob(row, cut) / n**length_penalty, cut, False))
        expected.sort(key=lambda e: -e[0])
        assert len(expected) == 15
        for i, (score, sequence, finished) in enumerate(expected):
            assert out.tokens[row, i, : len(sequence)].tolist() == list(sequence)
            assert out.lengths[row, i] == len(sequence) and bool(out.finished[row, i]) == finished
            assert math.isclose(float(out.scores[row, i]), score, rel_tol=1e-5, abs_tol=1e-5)
        assert out.scores[row, 15] == float("-inf")  # a 16th hypothesis does not exist


@pytest.mark.parametrize("name", ["transformer", "rnn-luong"])
def test_beam_hypotheses_are_sorted_normalised_and_end_at_eos(name):
    model = MODELS[name]()
    source, mask = sources()
    out = beam_search(model, source, mask, beam_size=4, max_len=9, length_penalty=0.8)
    assert out.tokens.shape[:2] == (4, 4)
    assert (out.scores[:, :-1] >= out.scores[:, 1:]).all()  # best first
    torch.testing.assert_close(out.scores, out.log_probs / out.lengths.float() ** 0.8)
    for b, k in itertools.product(range(4), range(4)):
        tokens, n = out.tokens[b, k], int(out.lengths[b, k])
        assert (tokens[n:] == PAD).all() and (tokens[: n - 1] != EOS).all()
        assert (tokens[n - 1] == EOS) == bool(out.finished[b, k])
    # the hypotheses' log-probabilities are the model's own (recomputed by teacher forcing)
    target_in = torch.cat([torch.full((16, 1), BOS), out.tokens.flatten(0, 1)[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(source.repeat_interleave(4, 0), mask.repeat_interleave(4, 0), target_in).logits
    log_probs = logits.log_softmax(-1).gather(2, out.tokens.flatten(0, 1)[..., None])[..., 0]  # [16, T]
    real = torch.arange(out.tokens.shape[-1]) < out.lengths.flatten()[:, None]
    torch.testing.assert_close((log_probs * real).sum(1), out.log_probs.flatten(), atol=1e-4, rtol=1e-5)


def test_decoding_stops_as_soon_as_every_source_is_done():
    toy = BigramToy(batch=3, vocab=6, max_steps=20, eos_step=4, seed=0)  # <eos> certain at step 5
    source, mask = sources((2, 2, 2))
    out = beam_search(toy, source, mask, beam_size=3, max_len=20)
    assert toy.steps == 5 and out.finished.all() and (out.lengths <= 5).all()
    toy.steps = 0
    out = greedy(toy, source, mask, max_len=20)
    assert toy.steps <= 5 and out.finished.all()
    toy.steps = 0
    beam_search(toy, source, mask, beam_size=3, max_len=3)  # cut before <eos>: unfinished, max_len steps
    assert toy.steps == 3


def test_length_penalty_decides_between_short_and_long():
    toy = BigramToy(batch=1, vocab=4, max_steps=3, seed=0)
    toy.table[:] = -1e4  # (practically) impossible
    toy.table[0, 0, BOS, [EOS, 3]] = torch.tensor([0.6, 0.4]).log()  # "<eos>": p=.6 (log -0.51)
    toy.table[0, 1, 3, 3] = toy.table[0, 2, 3, EOS] = 1e4  # "3 3 <eos>": p=.4 over 3 tokens (-0.31 per token)
    source, mask = sources((1,))
    short = beam_search(toy, source, mask, beam_size=2, max_len=3, length_penalty=0.0)
    long = beam_search(toy, source, mask, beam_size=2, max_len=3, length_penalty=1.0)
    assert short.best[0].tolist()[:1] == [EOS]
    assert long.best[0].tolist() == [3, 3, EOS]
    assert math.isclose(float(long.scores[0, 0]), math.log(0.4) / 3, rel_tol=1e-6)


def test_batched_beam_search_equals_one_source_at_a_time():
    model = MODELS["transformer"]()
    lengths = (5, 2, 7)
    source, mask = sources(lengths)
    batched = beam_search(model, source, mask, beam_size=3, max_len=8, need_weights=True)
    for b, n in enumerate(lengths):
        alone = beam_search(
            model, source[b : b + 1, :n], mask[b : b + 1, :n], beam_size=3, max_len=8, need_weights=True
        )
        t = alone.tokens.shape[-1]
        assert torch.equal(batched.tokens[b : b + 1, :, :t], alone.tokens)
        assert (batched.tokens[b, :, t:] == PAD).all()
        torch.testing.assert_close(batched.scores[b : b + 1], alone.scores, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(batched.attention[b : b + 1, :, :t, ..., :n], alone.attention, atol=1e-5, rtol=1e-5)
        assert (batched.attention[b, ..., n:] == 0).all()


def test_attention_of_each_hypothesis_follows_its_own_steps():
    toy = BigramToy(batch=2, vocab=6, max_steps=6, seed=4)
    source, mask = sources((2, 2))
    out = beam_search(toy, source, mask, beam_size=3, max_len=6, need_weights=True)
    assert out.attention.shape == (2, 3, out.tokens.shape[-1], 3)
    for b, k in itertools.product(range(2), range(3)):
        n = int(out.lengths[b, k])
        # the toy's weight at step t is t + 1 everywhere: the history must be this hypothesis's steps in order
        assert out.attention[b, k, :n, 0].tolist() == [float(t + 1) for t in range(n)]
        assert (out.attention[b, k, n:] == 0).all()


def test_bad_arguments_raise_clear_errors():
    model = MODELS["rnn-luong"]()
    source, mask = sources()
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        beam_search(model, source, mask, beam_size=0)
    with pytest.raises(ValueError, match="length_penalty must be >= 0"):
        beam_search(model, source, mask, length_penalty=-1.0)
    with pytest.raises(ValueError, match=r"source_mask must be a torch\.BoolTensor"):
        greedy(model, source, mask.long())
    with pytest.raises(ValueError, match=r"must both be \[B, S\]"):
        greedy(model, source, mask[:, :2])
    with pytest.raises(ValueError, match="max_len must be >= 1"):
        greedy(model, source, mask, max_len=0)
    with pytest.raises(ValueError, match="Recompute does not collect attention weights"):
        greedy(Recompute(model), source, mask, need_weights=True)


# ------------------------------------------------------------------------------------------- ensembles
def test_ensemble_mean_distribution_by_hand():
    a = torch.tensor([0.0, math.log(3.0), float("-inf")])  # probabilities 1/4, 3/4, 0
    b = torch.tensor([0.0, 0.0, float("-inf")])  # 1/2, 1/2, 0
    mean = mean_distribution_log([a, b]).exp()
    torch.testing.assert_close(mean, torch.tensor([3 / 8, 5 / 8, 0.0]))
    c = torch.tensor([float("-inf"), 0.0, 0.0])  # 0, 1/2, 1/2: a token one member rules out keeps the other's mass
    torch.testing.assert_close(mean_distribution_log([a, c]).exp(), torch.tensor([1 / 8, 5 / 8, 1 / 4]))
    assert mean_distribution_log([a, b])[2] == float("-inf")  # ruled out by every member: still impossible


def test_an_ensemble_of_one_decodes_as_its_member():
    model = rnn()
    source, mask = sources()
    ensemble = Seq2SeqEnsemble([model]).eval()
    assert isinstance(ensemble, StepwiseSeq2Seq)
    assert_same_hypotheses(greedy(ensemble, source, mask, max_len=9), greedy(model, source, mask, max_len=9))
    assert_same_hypotheses(
        beam_search(ensemble, source, mask, beam_size=3, max_len=9),
        beam_search(model, source, mask, beam_size=3, max_len=9),
    )


def test_mixed_families_cached_decoding_equals_recomputing_and_beam_one_equals_greedy():
    ensemble = Seq2SeqEnsemble([rnn(), transformer(), rnn("bahdanau")]).eval()
    source, mask = sources()
    cached = greedy(ensemble, source, mask, max_len=9)
    assert_same_hypotheses(cached, greedy(Recompute(ensemble), source, mask, max_len=9))
    assert_same_hypotheses(
        beam_search(ensemble, source, mask, beam_size=3, max_len=9),
        beam_search(Recompute(ensemble), source, mask, beam_size=3, max_len=9),
    )
    assert_same_hypotheses(beam_search(ensemble, source, mask, beam_size=1, max_len=9), cached)


def test_stepping_gives_the_teacher_forced_distributions_and_they_are_the_members_mean():
    members = [rnn(), transformer()]
    ensemble = Seq2SeqEnsemble(members).eval()
    source, mask = sources()
    target_in = torch.randint(3, VOCAB, (source.shape[0], 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        forced = ensemble(source, mask, target_in).logits  # [B, T, V]
        state = ensemble.start_decoding(source, mask, max_steps=5)
        stepped = torch.stack([ensemble.decode_step(target_in[:, t], state)[0] for t in range(5)], dim=1)
        by_hand = torch.stack([m(source, mask, target_in).logits.softmax(-1) for m in members]).mean(0).log()
    torch.testing.assert_close(stepped, forced, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(forced, by_hand, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(forced.logsumexp(-1), torch.zeros(forced.shape[:2]), atol=1e-5, rtol=0)  # normalised
    assert ensemble.decode_step(target_in[:, 0], ensemble.start_decoding(source, mask, max_steps=2))[1] is None


def test_refuses_no_members_and_members_of_different_vocabularies():
    with pytest.raises(ValueError, match="at least one model"):
        Seq2SeqEnsemble([])
    torch.manual_seed(0)
    other = build_rnn_seq2seq(VOCAB, VOCAB + 1, embed_dim=8, hidden_dim=12).eval()
    source, mask = sources()
    with pytest.raises(ValueError, match="different vocabulary sizes"):
        greedy(Seq2SeqEnsemble([rnn(), other]).eval(), source, mask, max_len=3)
