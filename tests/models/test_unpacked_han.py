"""The masking experiment's HAN: BiGRUs that run over the padding (``packed=False``) under each padding mode."""

from __future__ import annotations

import torch

from attnkit.masks import lengths_to_mask
from attnkit.models import BiGRUEncoder, HierarchicalAttentionClassifier
from attnkit.models.padding import UnmaskedPooling
from attnkit.tasks.classify.config import ClassifierConfig, build_classifier


def test_unpacked_gru_equals_packed_without_padding_in_values_and_gradients():
    torch.manual_seed(0)
    packed = BiGRUEncoder(5, 4)
    unpacked = BiGRUEncoder(5, 4, packed=False)
    unpacked.load_state_dict(packed.state_dict())
    x = torch.randn(3, 6, 5, requires_grad=True)
    mask = torch.ones(3, 6, dtype=torch.bool)
    a, b = packed(x, mask), unpacked(x, mask)
    torch.testing.assert_close(a, b)
    (grad_a,) = torch.autograd.grad(a.square().sum(), x)
    (grad_b,) = torch.autograd.grad(b.square().sum(), x)
    torch.testing.assert_close(grad_a, grad_b)


def test_unpacked_gru_reads_the_padding_backwards_but_not_forwards():
    torch.manual_seed(0)
    packed = BiGRUEncoder(5, 4)
    unpacked = BiGRUEncoder(5, 4, packed=False)
    unpacked.load_state_dict(packed.state_dict())
    mask = lengths_to_mask(torch.tensor([2, 6]), 6)  # [B, T]
    x = torch.randn(2, 6, 5) * mask[..., None]  # zero vectors at padding, as a padding_idx embedding gives
    a, b = packed(x, mask), unpacked(x, mask)
    # the forward direction has not reached the padding at a real position: identical there
    torch.testing.assert_close(a[0, :2, :4], b[0, :2, :4])
    # the backward direction starts in the padding: the short document's real outputs change
    assert (a[0, :2, 4:] - b[0, :2, 4:]).abs().max() > 1e-3
    # the full-length document has no padding: unchanged
    torch.testing.assert_close(a[1], b[1])
    # outputs at padding: zeros when packed, the GRU's own state when not
    assert (a[0, 2:] == 0).all() and (b[0, 2:].abs().sum(-1) > 0).all()


def han_batch(lengths: list[list[int]], words: int, sentences: int) -> tuple[torch.Tensor, ...]:
    """Token ids ``[B, S, W]`` with id 0 (padding) outside each sentence's length, word and sentence masks."""
    ids = torch.randint(1, 30, (len(lengths), sentences, words))
    word_mask = torch.zeros(ids.shape, dtype=torch.bool)
    for b, document in enumerate(lengths):
        for s, n in enumerate(document):
            word_mask[b, s, :n] = True
    return ids * word_mask, word_mask, word_mask.any(2)


def han(mode: str, packed: bool, seed: int = 0) -> HierarchicalAttentionClassifier:
    torch.manual_seed(seed)
    return HierarchicalAttentionClassifier(
        30, 3, embed_dim=8, word_hidden=6, sentence_hidden=6, attention_padding=mode, packed=packed
    ).eval()


def test_unpacked_han_masked_puts_no_weight_on_padding_yet_depends_on_it():
    model = han("masked", packed=False)
    ids, word_mask, sentence_mask = han_batch([[3, 1], [4, 4, 2]], words=7, sentences=4)
    out = model(ids, word_mask, sentence_mask)
    assert (out.words.weights[~word_mask] == 0).all()
    assert (out.sentences.weights[~sentence_mask] == 0).all()
    torch.testing.assert_close(out.sentences.weights.sum(1), torch.ones(2))
    # more padding after every sentence changes the document through the backward GRU
    wider = model(*(torch.nn.functional.pad(t, (0, 5)) for t in (ids, word_mask)), sentence_mask)
    assert (wider.logits - out.logits).abs().max() > 1e-5
    # the packed HAN with the same weights does not move
    packed = han("masked", packed=True)
    packed_logits = packed(ids, word_mask, sentence_mask).logits
    wider_packed = packed(*(torch.nn.functional.pad(t, (0, 5)) for t in (ids, word_mask)), sentence_mask)
    torch.testing.assert_close(wider_packed.logits, packed_logits)


def test_unpacked_han_unmasked_attends_to_padding_and_renormalised_equals_masked():
    ids, word_mask, sentence_mask = han_batch([[2, 1], [5, 3, 3]], words=8, sentences=5)
    unmasked = han("unmasked", packed=False)
    assert isinstance(unmasked.word_pooling, UnmaskedPooling)
    out = unmasked(ids, word_mask, sentence_mask)
    assert out.words.weights[0, 0, 2:].sum() > 0.05  # padded words take real weight
    assert out.sentences.weights[0, 2:].sum() > 0.05  # and so do padded sentences
    masked, renormalised = han("masked", packed=False), han("renormalised", packed=False)
    renormalised.load_state_dict(masked.state_dict())
    a, c = masked(ids, word_mask, sentence_mask), renormalised(ids, word_mask, sentence_mask)
    torch.testing.assert_close(a.words.weights, c.words.weights, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(a.logits, c.logits, atol=1e-5, rtol=1e-5)


def test_the_config_builds_the_unpacked_han_and_keeps_packing_by_default():
    config = ClassifierConfig(model="han", label_names=["a", "b"], attention_padding="unmasked", packed=False)
    model = build_classifier(config, vocab_size=40)
    assert not model.word_encoder.packed and not model.sentence_encoder.packed
    assert isinstance(model.sentence_pooling, UnmaskedPooling)
    assert ClassifierConfig.from_dict({"model": "han"}).packed  # old checkpoints: packed
    default = build_classifier(ClassifierConfig(model="han", label_names=["a", "b"]), vocab_size=40)
    assert default.word_encoder.packed and not isinstance(default.word_pooling, UnmaskedPooling)
    pooled = build_classifier(
        ClassifierConfig(model="pooled", encoder="bigru", packed=False, label_names=["a", "b"]), vocab_size=40
    )
    assert not pooled.encoder.packed
