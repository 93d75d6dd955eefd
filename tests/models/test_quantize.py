"""``--quantize int8`` (``attnkit.models.quantize``): the quantised model's fast cached decoding equals its reference
paths (and stays close to recomputing it), its logits stay close to float32's, the float model is left alone, and bad requests are refused."""

import copy

import pytest
import torch

from _near_ties import assert_same_greedy_up_to_near_ties
from attnkit.decoding import Recompute, beam_search, greedy
from attnkit.models.quantize import is_quantized, quantize_model
from attnkit.models.rnn_seq2seq import build_rnn_seq2seq
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq

VOCAB = 23


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def transformer(**options):
    torch.manual_seed(0)
    options = {"tie_output": False, **options}  # tied, a random model repeats its input token
    model = build_transformer_seq2seq(VOCAB, VOCAB, dim=32, heads=4, encoder_layers=2, decoder_layers=2, **options)
    with torch.no_grad():  # larger output weights: argmaxes that move from step to step
        model.output.weight.mul_(8.0)
    return model.eval()


def rnn():
    torch.manual_seed(0)
    model = build_rnn_seq2seq(VOCAB, VOCAB, attention="luong-general", embed_dim=16, hidden_dim=24)
    with torch.no_grad():
        model.output.weight.mul_(8.0)
    return model.eval()


MODELS = {
    "transformer": transformer,
    "transformer-rotary-postnorm": lambda: transformer(positions="rotary", norm_first=False),
    "rnn": rnn,
}


def sources(lengths=(9, 4, 7, 1)):
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(4, VOCAB, (len(lengths), max(lengths)), generator=g)
    return ids, torch.arange(max(lengths)) < torch.tensor(lengths)[:, None]


def _reference_paths(model: torch.nn.Module) -> torch.nn.Module:
    """The same (quantised) model with every attention module on its slow readable reference steps."""
    for module in model.modules():
        if hasattr(module, "fast_path"):
            module.fast_path = False
    return model


@pytest.mark.parametrize("name", list(MODELS))
def test_quantized_cached_decoding_takes_the_same_steps_as_the_reference_paths(name: str) -> None:
    """The fast one-token paths with int8 layers (projections called one by one, the output layer called) equal
    the reference steps of the same quantised model, token for token and score for score. Sources without padding:
    dynamic quantisation scales each call's activations by their range, and the packed encoder leaves padded rows
    out of its calls where the reference includes them (same model, slightly different activations)."""
    model = quantize_model(MODELS[name]())
    ids, mask = sources((9, 9, 9, 9))
    fast = greedy(model, ids, mask, max_len=12, eos_id=-1)
    reference = greedy(_reference_paths(copy.deepcopy(model)), ids, mask, max_len=12, eos_id=-1)
    assert len(set(fast.best.flatten().tolist())) > 3  # a decoding that moves, not one token repeated
    # SDPA and the math path agree to ~1e-7, and int8 rounding of the next activations can turn that into a
    # step: tokens equal but where the reference was at a near tie (tests/_near_ties.py), scores where equal
    referee = _reference_paths(copy.deepcopy(model))
    assert_same_greedy_up_to_near_ties(referee, ids, mask, fast.best, reference.best)
    same = (fast.best == reference.best).all(dim=1)  # [B] rows that took the same steps
    torch.testing.assert_close(fast.scores[same], reference.scores[same], atol=1e-4, rtol=1e-4)
    beams = beam_search(model, ids, mask, beam_size=3, max_len=12)
    beams_reference = beam_search(referee, ids, mask, beam_size=3, max_len=12)
    agree = (beams.tokens == beams_reference.tokens).all(dim=2).all(dim=1)  # [B]
    assert int((~agree).sum()) <= 1  # a near tie may part one row's beams on another CPU ...
    # ... and then the two best hypotheses found score alike
    torch.testing.assert_close(beams.scores[~agree, 0], beams_reference.scores[~agree, 0], atol=5e-2, rtol=0)


def _same_prefix_logits(model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor, steps: int):
    """Each step's logits ``[steps, B, V]`` decoded with the cache and recomputed over the whole prefix, on the
    same prefix (the cached decoding's own greedy tokens, fed to both)."""
    tokens = greedy(model, ids, mask, max_len=steps, eos_id=-1).best  # [B, steps]
    state = model.start_decoding(ids, mask, beams=1, max_steps=steps)
    prefix = torch.ones(ids.shape[0], 1, dtype=torch.long)  # <bos>
    cached, recomputed = [], []
    with torch.no_grad():
        for t in range(steps):
            cached.append(model.decode_step(prefix[:, -1], state)[0])  # [B, V]
            recomputed.append(model(ids, mask, prefix).logits[:, -1])
            prefix = torch.cat([prefix, tokens[:, t : t + 1]], dim=1)
    return torch.stack(cached), torch.stack(recomputed)


@pytest.mark.parametrize("name", list(MODELS))
def test_quantized_cached_decoding_stays_close_to_recomputing_the_quantized_model(name: str) -> None:
    """Not equal: dynamic quantisation scales the activations of each call by their own range, and a cached step
    sees one position where recomputing sees the whole prefix. Close: on the same prefix, every step's logits
    within int8's rounding (5% of their scale, as against float32; the tests' models differ by 1.8–4.3%,
    float32 by 0). Free-running
    greedy tokens are not the measure: one near-tie that rounds the other way sends the rest of a row elsewhere
    (the RNN here agreed on 73% of its tokens, issue #24's dropped case, with logits 1.8% apart)."""
    model = quantize_model(MODELS[name]())
    ids, mask = sources()
    cached, recomputed = _same_prefix_logits(model, ids, mask, steps=12)
    assert (cached - recomputed).abs().max() <= 0.05 * recomputed.abs().max()
    assert (cached - recomputed).abs().max() > 0  # int8 activations scaled per call: not the same numbers


def test_the_rnns_int8_cache_adds_no_error_of_its_own() -> None:
    """Why the RNN's quantised cached decoding differs from recomputing: only the output projection sees other rows
    (one step ``[B, D]`` against the whole prefix ``[B, t, D]``, so another activation scale). The recurrent step
    itself is the same call in both (the decoder loops over the steps in ``forward`` too), so with the output
    layer kept in float32 the int8 model's cached decoding equals its recomputation, token for token."""
    model = rnn()
    quantized = quantize_model(model)
    quantized.output = copy.deepcopy(model.output)
    ids, mask = sources()
    cached, recomputed = _same_prefix_logits(quantized, ids, mask, steps=12)
    torch.testing.assert_close(cached, recomputed, atol=1e-5, rtol=1e-5)
    fast = greedy(quantized, ids, mask, max_len=12, eos_id=-1)
    recomputing = greedy(Recompute(quantized), ids, mask, max_len=12, eos_id=-1)
    assert_same_greedy_up_to_near_ties(quantized, ids, mask, fast.best, recomputing.best)
    assert any(is_quantized(m) for m in quantized.decoder.modules())  # the attention's layers are int8


@pytest.mark.parametrize("name", list(MODELS))
def test_quantized_logits_stay_close_to_float32_and_the_float_model_is_untouched(name: str) -> None:
    model = MODELS[name]()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    quantized = quantize_model(model)
    ids, mask = sources()
    target = torch.cat([torch.ones(4, 1, dtype=torch.long), ids[:, :6]], dim=1)
    with torch.no_grad():
        exact, approx = model(ids, mask, target).logits, quantized(ids, mask, target).logits
    scale = exact.abs().max()
    assert (approx - exact).abs().max() <= 0.05 * scale  # int8 weights and activations: about 1% per layer
    assert (approx - exact).abs().max() > 0  # it did quantise
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not any(is_quantized(m) for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert is_quantized(quantized.output) and not is_quantized(model.output)


def test_a_tied_output_projection_is_quantised_apart_from_the_embedding() -> None:
    model = transformer(tie_output=True)
    quantized = quantize_model(model)
    assert is_quantized(quantized.output) and not is_quantized(quantized.target_embedding)
    ids, mask = sources((9, 9, 9, 9))
    reference = _reference_paths(copy.deepcopy(quantized))
    fast, slow = greedy(quantized, ids, mask, eos_id=-1), greedy(reference, ids, mask, eos_id=-1)
    assert_same_greedy_up_to_near_ties(reference, ids, mask, fast.best, slow.best)


def test_bad_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="quantize must be one of"):
        quantize_model(transformer(), "int4")
    with pytest.raises(ValueError, match="float32 models on the CPU"):
        quantize_model(transformer().double())
