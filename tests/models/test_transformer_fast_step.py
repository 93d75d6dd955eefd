"""The fast decoding step (weights laid out once, a flat run of kernels) against its reference, the modules'
one-token path (``TransformerDecoderLayer.decode_token``): the same tokens, logits equal to float32 rounding, the
same caches; it applies only where it computes what the modules compute, and follows weight changes."""

import pytest
import torch
from torch import nn

from attnkit.decoding import beam_search, greedy
from attnkit.distributions import Sparsemax
from attnkit.models.quantize import is_quantized, quantize_model
from attnkit.models.transformer.fast_step import fast_step_weights
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq

SRC_VOCAB, TGT_VOCAB = 23, 17


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def make_model(**options):
    torch.manual_seed(0)
    options = {"dim": 16, "heads": 2, "encoder_layers": 1, "decoder_layers": 2, "dropout": 0.0, **options}
    return build_transformer_seq2seq(SRC_VOCAB, TGT_VOCAB, **options).eval()


def make_sources(lengths=(6, 3, 1, 5)):
    g = torch.Generator().manual_seed(1)
    source = torch.randint(4, SRC_VOCAB, (len(lengths), max(lengths)), generator=g)
    return source, torch.arange(max(lengths)) < torch.tensor(lengths)[:, None]


def reference_state(model, source, mask, **options):
    """A decoding state that takes the modules' path: the fast step's reference."""
    state = model.start_decoding(source, mask, **options)
    assert state.fast is not None
    state.fast = None
    if not is_quantized(model.output):
        state.output_weight_t, state.output_bias = model.output.weight.t().contiguous(), model.output.bias
    return state


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize(
    "options", [{}, {"norm_first": False}, {"tie_output": False}, {"positions": "learned"}, {"quantize": "int8"}]
)
def test_fast_steps_equal_the_modules_steps(options, padded):
    options = dict(options)
    quantize = options.pop("quantize", None)
    model = make_model(**options)
    model = model if quantize is None else quantize_model(model, quantize)
    source, mask = make_sources()
    if not padded:
        mask = torch.ones_like(mask)
    fast = model.start_decoding(source, mask, max_steps=8)
    reference = reference_state(model, source, mask, max_steps=8)
    tokens = torch.full((source.shape[0],), 1)
    with torch.no_grad():
        for _ in range(8):
            got, _ = model.decode_step(tokens, fast)
            want, _ = model.decode_step(tokens, reference)
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
            tokens = want.argmax(-1)  # both continue from the reference's choice
    for got_cache, slow in zip(fast.caches, reference.caches, strict=True):
        torch.testing.assert_close(got_cache.keys, slow.keys, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(got_cache.values, slow.values, atol=1e-6, rtol=1e-5)


class _ModulesPath:
    """``model`` decoded through the modules' path (the reference), for greedy and beam search."""

    def __init__(self, model):
        self.model = model

    def start_decoding(self, source, mask, **options):
        return reference_state(self.model, source, mask, **options)

    def decode_step(self, tokens, state, *, need_weights=False):
        return self.model.decode_step(tokens, state, need_weights=need_weights)

    def reorder_state(self, state, indices):
        self.model.reorder_state(state, indices)


@pytest.mark.parametrize("quantize", [None, "int8"])
@pytest.mark.parametrize("beams", [1, 3])
def test_fast_decoding_gives_the_modules_tokens(beams, quantize):
    model = make_model(dim=32, heads=4, decoder_layers=3)
    if quantize is not None:  # the fast step on fbgemm's int8 kernels against the quantised modules
        model = quantize_model(model, quantize)
    source, mask = make_sources()
    if beams == 1:
        got, want = greedy(model, source, mask, max_len=12), greedy(_ModulesPath(model), source, mask, max_len=12)
    else:
        got = beam_search(model, source, mask, beam_size=beams, max_len=12)
        want = beam_search(_ModulesPath(model), source, mask, beam_size=beams, max_len=12)
    assert torch.equal(got.tokens, want.tokens) and torch.equal(got.lengths, want.lengths)
    torch.testing.assert_close(got.scores, want.scores, atol=1e-5, rtol=1e-5)


def test_the_fast_step_applies_only_where_it_computes_what_the_modules_compute():
    assert fast_step_weights(make_model()) is not None
    assert fast_step_weights(make_model().train()) is None  # dropout would be skipped
    assert fast_step_weights(make_model(positions="rotary")) is None
    assert fast_step_weights(quantize_model(make_model(), "int8")) is not None  # int8 throughout: its own kernels
    mixed = quantize_model(make_model(), "int8")
    mixed.decoder_layers[0].self_attention.k_proj = make_model().decoder_layers[0].self_attention.k_proj
    assert fast_step_weights(mixed) is None  # q, k, v half int8, half float: no one map computes them
    sparse = make_model()
    sparse.decoder_layers[1].cross_attention.distribution = Sparsemax()
    sparse.decoder_layers[1].cross_attention.fast_path = False
    assert fast_step_weights(sparse) is None
    odd = make_model()
    odd.decoder_layers[0].feed_forward[1] = nn.Tanh()
    assert fast_step_weights(odd) is None


def test_fast_weights_always_follow_the_models_current_weights():
    model = make_model()
    first = fast_step_weights(model)
    with torch.no_grad():
        model.decoder_layers[1].feed_forward[3].weight.mul_(2.0)  # an in-place change (an optimizer step)
    second = fast_step_weights(model)
    torch.testing.assert_close(second.layers[1].ff_out.weight_t, model.decoder_layers[1].feed_forward[3].weight.t())
    assert not torch.equal(first.layers[1].ff_out.weight_t, second.layers[1].ff_out.weight_t)
    with torch.no_grad():
        model.decoder_layers[1].feed_forward[3].weight.data.mul_(0.5)  # through .data: no version counter moves
    torch.testing.assert_close(fast_step_weights(model).layers[1].ff_out.weight_t, first.layers[1].ff_out.weight_t)
