"""Training steps of real models under autocast, on every device this machine has (the CPU always; CUDA skipped here
with the reason): a HAN step and a Transformer seq2seq step in bf16 give a finite loss close to fp32's, gradients
in every parameter pointing where fp32's do, float32 master weights, and the masks' guarantees (padding weighs
exactly 0, a row with nothing to attend to is all zeros); cached decoding equals recomputation on each device."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnkit.decoding import Recompute, beam_search, greedy
from attnkit.models import HierarchicalAttentionClassifier
from attnkit.models.seq2seq import build_seq2seq
from attnkit.multihead import MultiHeadAttention
from attnkit.runtime.devices import autocast, to_device
from attnkit.tasks.seq2seq.objective import label_smoothed_loss
from attnkit.training.optim import make_optimizer

CUDA_REASON = "CUDA not available: torch.cuda.is_available() is False"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=CUDA_REASON))]


def autocast_backward_works() -> bool:
    """Whether multi-head attention's fused projection has a backward that accepts autocast's dtypes (fixed on the
    ``mha`` branch, commit 0344726, by computing backward in the gradient's dtype)."""
    attention = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = attention(x).context
        out.float().sum().backward()
    except RuntimeError:
        return False
    return True


NEEDS_PACKED_LINEAR_FIX = pytest.mark.xfail(
    not autocast_backward_works(),
    reason="packed_linear's backward raises under autocast (bf16 x fp32) until the mha branch's fix is merged",
    raises=RuntimeError,
    strict=True,
)


def han_batch(device: str):
    """Three documents: sentences of 3, 0 (empty) and 2 words; one sentence of 1 word; no sentence at all."""
    documents = [[3, 0, 2], [1], []]
    ids = torch.randint(1, 30, (3, 3, 4), generator=torch.Generator().manual_seed(1))
    word_mask = torch.zeros(ids.shape, dtype=torch.bool)
    for b, document in enumerate(documents):
        for s, words in enumerate(document):
            word_mask[b, s, :words] = True
    sentence_mask = torch.tensor([[True, True, True], [True, False, False], [False, False, False]])
    return to_device((ids, word_mask, sentence_mask, torch.tensor([0, 1, 2])), torch.device(device))


def step(model: nn.Module, loss_of, device: str, precision: str) -> tuple[float, dict[str, torch.Tensor], object]:
    """One training step: the loss (under autocast), the gradients, then an AdamW step; returns the loss, the
    gradients and the forward's output."""
    model.zero_grad(set_to_none=True)
    with autocast(torch.device(device), precision):
        loss, output = loss_of(model)
    loss.backward()
    gradients = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    make_optimizer(model, lr=1e-3).step()
    return loss.item(), gradients, output


def assert_like_fp32(model_factory, loss_of, device: str) -> tuple:
    """The bf16 step against the fp32 step of the same model: finite loss within 2%, a gradient in every parameter
    (finite, float32, nonzero where fp32's is, pointing where fp32's does), float32 weights after AdamW's step.
    Returns the bf16 output."""
    loss32, grads32, _ = step(model_factory().to(device), loss_of, device, "fp32")
    model = model_factory().to(device)
    seen = set()  # what the linear layers computed in: autocast acted if bf16 (not "the loss differs", #37)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    hooks = [m.register_forward_hook(lambda _m, _i, out: seen.add(out.dtype)) for m in linears]
    loss16, grads16, output = step(model, loss_of, device, "bf16")
    for hook in hooks:
        hook.remove()
    assert torch.isfinite(torch.tensor(loss16)) and torch.bfloat16 in seen
    assert loss16 == pytest.approx(loss32, rel=0.02)
    assert grads16.keys() == grads32.keys() == {name for name, p in model.named_parameters() if p.requires_grad}
    whole16, whole32 = (torch.cat([g[name].flatten() for name in sorted(g)]) for g in (grads16, grads32))
    assert (whole16 - whole32).norm() < 0.03 * whole32.norm()  # measured: 0.0065 (HAN), 0.0037 (Transformer)
    for name, gradient in grads16.items():
        assert gradient.dtype == torch.float32 and torch.isfinite(gradient).all(), name
        reference = grads32[name]
        # Keys' biases have no true gradient (softmax ignores a shift shared by all keys): fp32 gives ~1e-9 noise,
        # with no direction to compare. The smallest real ones (a pooling bias, 3e-4 of the whole) round most:
        # cosine 0.978 measured there, 0.998 and more elsewhere.
        if reference.norm() > 1e-4 * whole32.norm():
            cosine = F.cosine_similarity(gradient.flatten(), reference.flatten(), dim=0)
            assert cosine > 0.95, (name, float(cosine))
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())
    return output


@pytest.mark.parametrize("device", DEVICES)
def test_a_han_training_step_in_bf16_matches_fp32_and_keeps_its_masks(device):
    ids, word_mask, sentence_mask, labels = han_batch(device)

    def han():
        torch.manual_seed(0)
        return HierarchicalAttentionClassifier(30, 3, embed_dim=16, word_hidden=8, sentence_hidden=8, dropout=0.0)

    def loss_of(model):
        output = model(ids, word_mask, sentence_mask)
        return F.cross_entropy(output.logits.float(), labels), output

    output = assert_like_fp32(han, loss_of, device)
    words, sentences = output.words.weights, output.sentences.weights  # [B, S, W], [B, S]
    assert (words[~word_mask] == 0).all() and (sentences[~sentence_mask] == 0).all()  # padding: exactly 0
    assert (words[0, 1] == 0).all() and (sentences[2] == 0).all()  # an empty sentence, an empty document
    real = word_mask.any(-1)
    torch.testing.assert_close(
        words.float().sum(-1)[real], torch.ones(int(real.sum()), device=device), atol=2e-2, rtol=0
    )
    torch.testing.assert_close(sentences.float().sum(-1)[:2], torch.ones(2, device=device), atol=2e-2, rtol=0)


@NEEDS_PACKED_LINEAR_FIX
@pytest.mark.parametrize("device", DEVICES)
def test_a_transformer_training_step_in_bf16_matches_fp32_and_keeps_its_masks(device):
    generator = torch.Generator().manual_seed(2)
    source = torch.randint(4, 20, (3, 6), generator=generator)
    source_mask = torch.tensor([[True] * 6, [True] * 2 + [False] * 4, [False] * 6])  # the last: nothing to attend
    target = torch.randint(4, 20, (3, 5), generator=generator)
    source, source_mask, target = to_device((source, source_mask, target), torch.device(device))

    def transformer():
        torch.manual_seed(0)
        options = {"model": "transformer", "dim": 16, "heads": 2, "encoder_layers": 1, "decoder_layers": 1}
        return build_seq2seq({**options, "dropout": 0.0, "source_vocab_size": 20, "target_vocab_size": 20})

    def loss_of(model):
        output = model(source, source_mask, target[:, :-1], need_weights=True)
        return label_smoothed_loss(output.logits, target[:, 1:]), output

    output = assert_like_fp32(transformer, loss_of, device)
    for cross in output.cross_attention:  # [B, H, T, S] per layer
        assert (cross[1, ..., 2:] == 0).all()  # padded source positions weigh exactly 0
        assert (cross[2] == 0).all()  # a source with no token: all-zero rows, no NaN
        torch.testing.assert_close(
            cross[:2].float().sum(-1), torch.ones_like(cross[:2].float().sum(-1)), atol=2e-2, rtol=0
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("attention", ["luong-general", "bahdanau"])
def test_an_lstm_seq2seq_training_step_in_bf16_matches_fp32(device, attention):
    generator = torch.Generator().manual_seed(4)
    source = torch.randint(4, 20, (3, 6), generator=generator)
    source_mask = torch.tensor([[True] * 6, [True] * 2 + [False] * 4, [True] + [False] * 5])
    target = torch.randint(4, 20, (3, 5), generator=generator)
    source, source_mask, target = to_device((source, source_mask, target), torch.device(device))

    def lstm():
        torch.manual_seed(0)
        options = {"model": "rnn", "cell": "lstm", "attention": attention, "embed_dim": 8, "hidden_dim": 16}
        return build_seq2seq(
            {**options, "num_layers": 2, "dropout": 0.0, "source_vocab_size": 20, "target_vocab_size": 20}
        )

    def loss_of(model):
        output = model(source, source_mask, target[:, :-1], need_weights=True)
        return label_smoothed_loss(output.logits, target[:, 1:]), output

    output = assert_like_fp32(lstm, loss_of, device)
    assert (output.attention[1, :, 2:] == 0).all() and (output.attention[2, :, 1:] == 0).all()  # [B, T, S]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("family", ["transformer", "rnn"])
def test_cached_decoding_equals_recomputation_on_the_device(device, family):
    torch.manual_seed(0)
    options = {"transformer": {"dim": 16, "heads": 2, "encoder_layers": 1, "decoder_layers": 2}, "rnn": {}}[family]
    model = build_seq2seq({"model": family, **options, "source_vocab_size": 13, "target_vocab_size": 13})
    model = model.to(device).eval()
    lengths = torch.tensor([5, 2, 7, 1], device=device)
    source = torch.randint(3, 13, (4, 7), generator=torch.Generator().manual_seed(3)).to(device)
    mask = torch.arange(7, device=device) < lengths[:, None]  # [B, S]
    with torch.no_grad():
        for decode, options in ((greedy, {}), (beam_search, {"beam_size": 3})):
            cached, recomputed = (decode(m, source, mask, max_len=9, **options) for m in (model, Recompute(model)))
            assert cached.tokens.device.type == device
            assert torch.equal(cached.tokens, recomputed.tokens) and torch.equal(cached.lengths, recomputed.lengths)
            torch.testing.assert_close(cached.scores, recomputed.scores, atol=1e-5, rtol=1e-5)
