"""RNN encoder-decoder: stepwise decoding == teacher forcing, padding changes nothing, local windows hold,
additive keys are projected once per source, and bad configurations fail with clear errors."""

import pytest
import torch

from attnkit.models.rnn_decoders import RNNEncoder
from attnkit.models.rnn_seq2seq import ATTENTIONS, build_rnn_seq2seq
from attnkit.scores import AdditiveScore

SRC_VOCAB, TGT_VOCAB = 23, 17


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def make_model(attention, *, cell="gru", bidirectional=True, num_layers=2, window=2):
    torch.manual_seed(0)
    model = build_rnn_seq2seq(
        SRC_VOCAB,
        TGT_VOCAB,
        attention=attention,
        cell=cell,
        embed_dim=8,
        hidden_dim=12,
        num_layers=num_layers,
        bidirectional=bidirectional,
        window=window,
    )
    return model.eval()


def make_batch(source_lengths, target_lengths, *, extra_source=0, extra_target=0, seed=1):
    """Random ids everywhere (padding included: it must not matter), masks from the lengths."""
    g = torch.Generator().manual_seed(seed)
    s, t = max(source_lengths) + extra_source, max(target_lengths) + extra_target
    source = torch.randint(4, SRC_VOCAB, (len(source_lengths), s), generator=g)
    target = torch.randint(3, TGT_VOCAB, (len(target_lengths), t), generator=g)
    source_mask = torch.arange(s) < torch.tensor(source_lengths)[:, None]
    return source, source_mask, target


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_stepwise_decoding_equals_teacher_forced_forward(attention, cell):
    model = make_model(attention, cell=cell)
    source, source_mask, target = make_batch([6, 3, 1], [5, 5, 5])
    with torch.no_grad():
        forward = model(source, source_mask, target, need_weights=True)
        state = model.start_decoding(source, source_mask, max_steps=5)
        steps = [model.decode_step(target[:, t], state, need_weights=True) for t in range(target.shape[1])]
    logits = torch.stack([logit for logit, _ in steps], dim=1)  # [B, T, V]
    torch.testing.assert_close(logits, forward.logits, atol=1e-5, rtol=1e-5)
    if attention == "none":
        assert forward.attention is None and all(w is None for _, w in steps) and state.memory is None
    else:
        weights = torch.stack([w for _, w in steps], dim=1)  # [B, T, S]
        assert forward.attention.shape == (3, 5, 6)
        torch.testing.assert_close(weights, forward.attention, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("attention", ["luong-general", "local-p", "bahdanau", "none"])
def test_beam_rows_and_reorder_follow_their_source(attention):
    """With beams, each row of a source's group decodes like the source alone; reorder moves the state along."""
    model = make_model(attention, cell="lstm")
    source, source_mask, target = make_batch([5, 2], [4, 4])
    with torch.no_grad():
        forward = model(source, source_mask, target)
        state = model.start_decoding(source, source_mask, beams=3, max_steps=4)
        for t in range(4):
            if t == 2:  # shuffle rows within each source's group: identical rows, so nothing may change
                model.reorder_state(state, torch.tensor([2, 0, 1, 4, 5, 3]))
            logits, _ = model.decode_step(target[:, t].repeat_interleave(3), state)  # [B·3, V]
            torch.testing.assert_close(logits, forward.logits[:, t].repeat_interleave(3, dim=0), atol=1e-5, rtol=1e-5)
        with pytest.raises(ValueError, match="within each source's group of 3 rows"):
            model.reorder_state(state, torch.tensor([3, 1, 2, 0, 4, 5]))


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_pair_alone_equals_pair_in_a_padded_batch(attention, bidirectional):
    model = make_model(attention, bidirectional=bidirectional, cell="gru" if bidirectional else "lstm")
    source_lengths, target_lengths = [7, 2, 4], [3, 6, 1]
    source, source_mask, target = make_batch(source_lengths, target_lengths, extra_source=3, extra_target=2)
    with torch.no_grad():
        batched = model(source, source_mask, target, need_weights=True)
        for b, (s, t) in enumerate(zip(source_lengths, target_lengths, strict=True)):
            alone = model(source[b : b + 1, :s], source_mask[b : b + 1, :s], target[b : b + 1, :t], need_weights=True)
            torch.testing.assert_close(batched.logits[b, :t], alone.logits[0], atol=1e-5, rtol=1e-5)
            if attention == "none":
                continue
            torch.testing.assert_close(batched.attention[b, :t, :s], alone.attention[0], atol=1e-6, rtol=1e-5)
            assert (batched.attention[b, :, s:] == 0).all()  # padded source positions get no weight
            sums = batched.attention[b, :t].sum(-1)
            ok = torch.isclose(sums, torch.ones_like(sums)) | (sums == 0)  # local windows may miss the source
            assert ok.all()


def test_encoder_outputs_are_zero_at_padding_and_final_state_ignores_it():
    torch.manual_seed(0)
    for cell in ("gru", "lstm"):
        encoder = RNNEncoder(5, 8, cell=cell, num_layers=2, bidirectional=True).eval()
        x = torch.randn(2, 6, 5)
        mask = torch.arange(6) < torch.tensor([6, 3])[:, None]
        out, final = encoder(x, mask)
        alone_out, alone_final = encoder(x[1:, :3], mask[1:, :3])
        assert (out[1, 3:] == 0).all()
        torch.testing.assert_close(out[1, :3], alone_out[0], atol=1e-6, rtol=1e-5)
        finals = final if isinstance(final, tuple) else (final,)
        alone_finals = alone_final if isinstance(alone_final, tuple) else (alone_final,)
        for f, a in zip(finals, alone_finals, strict=True):
            assert f.shape == (2, 2, 8)  # [L, B, D]: both directions concatenated
            torch.testing.assert_close(f[:, 1], a[:, 0], atol=1e-6, rtol=1e-5)


def test_local_m_attends_only_inside_its_window_around_the_step():
    window = 1
    model = make_model("local-m", window=window)
    source, source_mask, target = make_batch([8, 8], [6, 6])
    with torch.no_grad():
        weights = model(source, source_mask, target, need_weights=True).attention  # [B, T, S]
    offset = torch.arange(8)[None, :] - torch.arange(6)[:, None]  # [T, S] = s - t
    assert (weights[:, offset.abs() > window] == 0).all()
    assert (weights[:, offset.abs() <= window] > 0).all()


def test_local_p_window_follows_its_predicted_centre_and_trains_the_predictor():
    window = 2
    model = make_model("local-p", window=window)
    source, source_mask, target = make_batch([9, 4], [5, 5])
    weights = model(source, source_mask, target, need_weights=True).attention  # [B, T, S]
    support = (weights > 0).sum(-1)  # [B, T]
    assert (support <= 2 * window + 1).all() and (support >= 1).all()
    model(source, source_mask, target).logits.logsumexp(-1).sum().backward()
    position_proj = model.decoder.attention.distribution.position_proj
    assert position_proj.weight.grad is not None and position_proj.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("attention", ["bahdanau", "luong-concat"])
def test_additive_keys_are_projected_once_per_source(attention, monkeypatch):
    model = make_model(attention)
    calls = []
    original = AdditiveScore.project_keys

    def counting(self, key):
        calls.append(tuple(key.shape))
        return original(self, key)

    monkeypatch.setattr(AdditiveScore, "project_keys", counting)
    source, source_mask, target = make_batch([6, 3], [7, 7])
    with torch.no_grad():
        model(source, source_mask, target)
        assert calls == [(2, 6, 12)]
        state = model.start_decoding(source, source_mask, beams=2, max_steps=7)
        for t in range(7):
            model.decode_step(target[:, t].repeat_interleave(2), state)
    assert calls == [(2, 6, 12), (2, 6, 12)]  # once per source, before the beams are expanded


def test_bad_configurations_raise_clear_errors():
    with pytest.raises(ValueError, match=r"attention must be one of .*luong-dot"):
        build_rnn_seq2seq(5, 5, attention="luong")
    with pytest.raises(ValueError, match="cell must be one of"):
        build_rnn_seq2seq(5, 5, cell="rnn")
    with pytest.raises(ValueError, match="even output_dim"):
        build_rnn_seq2seq(5, 5, hidden_dim=7)
    model = make_model("luong-dot")
    source, source_mask, target = make_batch([3], [2])
    with pytest.raises(ValueError, match=r"source_ids and source_mask must both be \[B, S\]"):
        model(source, source_mask[:, :2], target)
    with pytest.raises(ValueError, match="target_in must be"):
        model(source, source_mask, target[0])
