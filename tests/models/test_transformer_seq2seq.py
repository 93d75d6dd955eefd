"""Transformer encoder-decoder: KV-cached decoding == full recomputation, pre-projected cross-attention ==
MultiHeadAttention, padding changes nothing, positions are used, embeddings share and tie as asked."""

import pytest
import torch

from attnkit import MultiHeadAttention
from attnkit.distributions import Sparsemax
from attnkit.models.transformer.positions import POSITION_SCHEMES, position_scheme
from attnkit.models.transformer.seq2seq import (
    POSITIONS,
    TransformerSeq2Seq,
    attend_memory,
    build_transformer_seq2seq,
    project_memory,
)

SRC_VOCAB, TGT_VOCAB = 23, 17


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def make_model(*, positions="sinusoidal", norm_first=True, **options):
    torch.manual_seed(0)
    options = {"dim": 16, "heads": 2, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.0, **options}
    vocab = options.pop("vocab", (SRC_VOCAB, TGT_VOCAB))
    return build_transformer_seq2seq(*vocab, positions=positions, norm_first=norm_first, **options).eval()


def make_batch(source_lengths, target_lengths, *, extra_source=0, extra_target=0, seed=1):
    """Random ids everywhere (padding included: it must not matter), the source mask from the lengths."""
    g = torch.Generator().manual_seed(seed)
    s, t = max(source_lengths) + extra_source, max(target_lengths) + extra_target
    source = torch.randint(4, SRC_VOCAB, (len(source_lengths), s), generator=g)
    target = torch.randint(3, TGT_VOCAB, (len(target_lengths), t), generator=g)
    return source, torch.arange(s) < torch.tensor(source_lengths)[:, None], target


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("positions", POSITIONS)
def test_kv_cached_steps_equal_full_recomputation(positions, norm_first):
    model = make_model(positions=positions, norm_first=norm_first)
    source, source_mask, target = make_batch([6, 3, 1], [7, 7, 7])
    with torch.no_grad():
        full = model(source, source_mask, target, need_weights=True)
        state = model.start_decoding(source, source_mask, max_steps=7)
        steps = [model.decode_step(target[:, t], state, need_weights=True) for t in range(7)]
    assert all(cache.size == 7 for cache in state.caches)
    logits = torch.stack([logit for logit, _ in steps], dim=1)  # [B, T, V]
    torch.testing.assert_close(logits, full.logits, atol=1e-5, rtol=1e-5)
    cross = torch.stack([w for _, w in steps], dim=2)  # [B, L, T, H, S]
    for layer, expected in enumerate(full.cross_attention):  # [B, H, T, S]
        torch.testing.assert_close(cross[:, layer].transpose(1, 2), expected, atol=1e-6, rtol=1e-5)
    assert [w.shape for w in full.self_attention] == [(3, 2, 7, 7)] * 2
    assert [w.shape for w in full.encoder_attention] == [(3, 2, 6, 6)] * 2
    assert (torch.stack(full.self_attention).triu(1) == 0).all()  # causal: no weight on later targets


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("positions", POSITIONS)
def test_one_token_decoding_path_equals_the_general_layer_path(positions, norm_first):
    """decode_step without weights runs TransformerDecoderLayer.decode_token; with weights, the layers' forward."""
    model = make_model(positions=positions, norm_first=norm_first)
    source, source_mask, target = make_batch([6, 3, 1, 2], [5, 5, 5, 5])
    source_mask[3] = False  # a source with nothing to attend to: its cross-attention gives zeros on both paths
    with torch.no_grad():
        lean = model.start_decoding(source, source_mask, max_steps=5)
        general = model.start_decoding(source, source_mask, max_steps=5)
        for t in range(5):
            got, no_weights = model.decode_step(target[:, t], lean)
            want, _ = model.decode_step(target[:, t], general, need_weights=True)
            assert no_weights is None and torch.isfinite(got).all()
            torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    for fast, slow in zip(lean.caches, general.caches, strict=True):
        torch.testing.assert_close(fast.keys, slow.keys, atol=1e-6, rtol=1e-6)  # rounding: other matmul shapes
        torch.testing.assert_close(fast.values, slow.values, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("fast_path", [True, False])
def test_preprojected_cross_attention_equals_multihead_attention(fast_path):
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 4).eval()
    if not fast_path:
        attention.distribution, attention.fast_path = Sparsemax(), False
    query, memory = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    memory_mask = torch.arange(7) < torch.tensor([7, 2, 4])[:, None]
    expected = attention(query, memory, key_mask=memory_mask, need_weights=True)
    context, weights = attend_memory(
        attention, query, project_memory(attention, memory), memory_mask, need_weights=True
    )
    torch.testing.assert_close(context, expected.context, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(weights, expected.weights, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("positions", POSITIONS)
def test_pair_alone_equals_pair_in_a_padded_batch(positions):
    model = make_model(positions=positions)
    source_lengths, target_lengths = [7, 2, 4], [3, 6, 1]
    source, source_mask, target = make_batch(source_lengths, target_lengths, extra_source=3, extra_target=2)
    with torch.no_grad():
        batched = model(source, source_mask, target, need_weights=True)
        for b, (s, t) in enumerate(zip(source_lengths, target_lengths, strict=True)):
            alone = model(source[b : b + 1, :s], source_mask[b : b + 1, :s], target[b : b + 1, :t], need_weights=True)
            torch.testing.assert_close(batched.logits[b, :t], alone.logits[0], atol=1e-5, rtol=1e-5)
            for got, want in zip(batched.cross_attention, alone.cross_attention, strict=True):
                torch.testing.assert_close(got[b, :, :t, :s], want[0], atol=1e-6, rtol=1e-5)
                assert (got[b, :, :, s:] == 0).all()
            for got, want in zip(batched.encoder_attention, alone.encoder_attention, strict=True):
                torch.testing.assert_close(got[b, :, :s, :s], want[0], atol=1e-6, rtol=1e-5)


def test_cross_attention_keys_are_projected_once_per_source(monkeypatch):
    model = make_model(decoder_layers=3)
    calls = []
    for layer in model.decoder_layers:
        layer.cross_attention.k_proj.register_forward_hook(lambda module, args, out: calls.append(args[0].shape))
    source, source_mask, target = make_batch([5, 2], [6, 6])
    with torch.no_grad():
        state = model.start_decoding(source, source_mask, beams=4, max_steps=6)
        for t in range(6):
            model.decode_step(target[:, t].repeat_interleave(4), state)
    assert calls == [(2, 5, 16)] * 3  # one projection per layer, on the sources before beam expansion


@pytest.mark.parametrize("positions", POSITIONS)
def test_positions_are_used_by_encoder_and_decoder(positions):
    """Without positions attention is permutation-equivariant; with them, reversing the input changes outputs."""
    model = make_model(positions=positions)
    source, source_mask, target = make_batch([6], [5])
    with torch.no_grad():
        memory, _ = model.encode(source, source_mask)
        reversed_memory, _ = model.encode(source.flip(1), source_mask)
        assert not torch.allclose(memory, reversed_memory.flip(1), atol=1e-4)
        a = model(source, source_mask, target).logits
        b = model(source, source_mask, torch.cat([target[:, :1], target[:, 1:].flip(1)], 1)).logits
        assert not torch.allclose(a[:, -1], b[:, -1], atol=1e-4)


def test_shared_embeddings_and_tied_output():
    shared = make_model(vocab=(19, 19), share_embeddings=True, tie_output=True)
    assert shared.source_embedding is shared.target_embedding
    assert shared.output.weight is shared.target_embedding.weight
    untied = make_model(share_embeddings=False, tie_output=False)
    assert untied.source_embedding is not untied.target_embedding
    assert untied.output.weight is not untied.target_embedding.weight
    names = {name for name, _ in shared.named_parameters()}
    assert "output.weight" not in names  # one parameter, listed once
    with pytest.raises(ValueError, match="share_embeddings needs one vocabulary"):
        make_model(share_embeddings=True)


def test_decoding_limits_and_bad_arguments_raise_clear_errors():
    model = make_model(positions="learned", max_len=4)
    source, source_mask, _ = make_batch([3], [1])
    state = model.start_decoding(source, source_mask, max_steps=8)
    tokens = torch.ones(1, dtype=torch.long)
    with torch.no_grad():
        for _ in range(4):
            model.decode_step(tokens, state)
        with pytest.raises(ValueError, match="LearnedPositions holds 4 positions"):
            model.decode_step(tokens, state)
    model = make_model()
    state = model.start_decoding(source, source_mask, max_steps=2)
    with torch.no_grad():
        model.decode_step(tokens, state)
        model.decode_step(tokens, state)
        with pytest.raises(ValueError, match="KVCache overflow"):
            model.decode_step(tokens, state)
    with pytest.raises(ValueError, match="positions must be one of"):
        make_model(positions="alibi")
    with pytest.raises(ValueError, match="not divisible by heads"):
        make_model(dim=10, heads=4)
    with pytest.raises(ValueError, match=r"indices must have shape \[N\]"):
        model.reorder_state(model.start_decoding(source, source_mask, beams=2, max_steps=2), torch.tensor([0]))


@pytest.mark.parametrize("name", POSITIONS)
def test_a_name_maps_to_its_scheme_once_and_the_builder_equals_the_constructor(name):
    scheme = position_scheme(name)
    assert scheme is POSITION_SCHEMES[name] and scheme.name == name
    torch.manual_seed(0)
    built = build_transformer_seq2seq(11, 13, dim=16, heads=2, positions=name, max_len=8)
    torch.manual_seed(0)
    constructed = TransformerSeq2Seq(11, 13, dim=16, heads=2, positions=scheme, max_len=8)
    assert built.state_dict().keys() == constructed.state_dict().keys()
    assert all(
        torch.equal(a, b) for a, b in zip(built.state_dict().values(), constructed.state_dict().values(), strict=True)
    )
    assert (built.source_positions is None) == (name == "rotary")
    assert (built.encoder_layers[0].attention.rotary is not None) == (name == "rotary")


def test_the_constructor_takes_a_scheme_not_a_name():
    with pytest.raises(TypeError, match="position_scheme"):
        TransformerSeq2Seq(11, 13, dim=16, heads=2, positions="rotary")
