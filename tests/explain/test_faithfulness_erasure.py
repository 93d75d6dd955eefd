"""Erasure that means removal: ``delete`` equals the forward of the shortened input, ``mask`` keeps the token out
of every attention, ``unk`` replaces it; k rounds up to at least one token."""

from __future__ import annotations

import pytest
import torch
from _faithfulness_models import han_model, han_subject, pooled_model, pooled_subject

from attnkit.data.batching import collate_documents, collate_tokens
from attnkit.explain.faithfulness.erasure import as_erasure, flip_counts, keep_top, top_counts


def test_top_k_rounds_up_and_keeps_at_least_one_token():
    assert top_counts(30) == [1, 2, 3, 6, 15]
    assert top_counts(1) == [1, 1, 1, 1, 1]
    assert top_counts(7) == [1, 1, 1, 2, 4]  # 0.07 -> 1, 0.35 -> 1, 0.7 -> 1, 1.4 -> 2, 3.5 -> 4
    assert top_counts(200) == [2, 10, 20, 40, 100]


def test_keep_top_erases_or_keeps_exactly_the_first_units_of_the_order():
    order = torch.tensor([3, 0, 2, 1])
    erased = keep_top(order, [1, 2], keep=False)
    assert erased.tolist() == [[True, True, True, False], [False, True, True, False]]
    assert (keep_top(order, [1, 2], keep=True) == ~erased).all()
    assert flip_counts(5) == [1, 2, 3, 4, 5]
    assert flip_counts(120, most=50) == [3 * i for i in range(1, 41)]
    with pytest.raises(ValueError, match="unknown erasure 'drop'"):
        as_erasure("drop")


def _shortened_forward(model, ids, keep_row):
    kept = [t for t, k in zip(ids, keep_row.tolist(), strict=True) if k]
    batch = collate_tokens([(kept, None)])
    with torch.no_grad():
        return torch.softmax(model(batch.token_ids, batch.mask).logits, -1)[0]


@pytest.mark.parametrize("encoder", ["none", "bigru", "transformer"])
def test_delete_equals_the_forward_of_the_shortened_input(encoder):
    model = pooled_model(encoder)
    ids = torch.randint(2, 40, (11,), generator=torch.Generator().manual_seed(1)).tolist()
    subject = pooled_subject(model, ids)
    keep = torch.rand(9, 11, generator=torch.Generator().manual_seed(2)) > 0.4
    keep[0] = False  # nothing left: the empty document
    keep[1] = True  # nothing erased: the prediction itself
    batched = subject.probabilities_when(keep, "delete")  # [9, C]
    for row in range(9):
        torch.testing.assert_close(batched[row], _shortened_forward(model, ids, keep[row]), rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(batched[1], subject.probabilities, rtol=1e-6, atol=1e-6)


def test_han_delete_drops_words_and_sentences_left_empty():
    model = han_model()
    sentences = [[4, 5, 6], [7], [8, 9, 10, 11]]
    subject = han_subject(model, sentences)
    keep = torch.tensor(
        [
            [True, False, True, False, True, True, True, True],  # word 1 and the whole sentence 2 go
            [False, False, False, True, False, False, False, False],  # only "7" is left
            [True] * 8,
        ]
    )
    batched = subject.probabilities_when(keep, "delete")
    expected = [[[4, 6], [8, 9, 10, 11]], [[7]], sentences]
    for row, document in enumerate(expected):
        batch = collate_documents([(document, None)])
        with torch.no_grad():
            alone = torch.softmax(model(batch.token_ids, batch.word_mask, batch.sentence_mask).logits, -1)[0]
        torch.testing.assert_close(batched[row], alone, rtol=1e-6, atol=1e-6)


def test_mask_erasure_keeps_the_token_out_of_every_attention():
    """Without an encoder, a token masked out of the pooling changes the output exactly as deleting it does; with
    a BiGRU the token is still read, so the two differ."""
    ids = [3, 9, 12, 7, 30, 2]
    keep = torch.tensor([[True, False, True, True, False, True]])
    plain = pooled_subject(pooled_model("none"), ids)
    torch.testing.assert_close(plain.probabilities_when(keep, "mask"), plain.probabilities_when(keep, "delete"))
    recurrent = pooled_subject(pooled_model("bigru"), ids)
    assert not torch.allclose(recurrent.probabilities_when(keep, "mask"), recurrent.probabilities_when(keep, "delete"))
    model = pooled_model("transformer")
    with torch.no_grad():
        out = model(torch.tensor([ids]), torch.ones(1, 6, dtype=torch.bool), attend_mask=keep)
    assert out.pooling.weights[0, :, ~keep[0]].abs().max() == 0


def test_han_mask_gives_erased_words_no_weight_and_unk_replaces_them():
    model = han_model()
    subject = han_subject(model, [[4, 5], [6, 7, 8]])
    keep = torch.tensor([[True, False, False, False, False]])  # sentence 2 wholly masked
    ids, word_mask, sentence_mask = subject._whole()
    attend = torch.tensor([[[True, False, False], [False, False, False]]])
    with torch.no_grad():
        out = model(ids, word_mask, sentence_mask, attend_mask=attend)
    assert out.words.weights[0, 0, 1] == 0 and out.sentences.weights[0, 1] == 0
    torch.testing.assert_close(
        subject.probabilities_when(keep, "mask")[0], torch.softmax(out.logits, -1)[0], rtol=1e-6, atol=1e-6
    )
    unk_ids = torch.tensor([[[4, 1, 0], [1, 1, 1]]])
    with torch.no_grad():
        unk = torch.softmax(model(unk_ids, word_mask, sentence_mask).logits, -1)[0]
    torch.testing.assert_close(subject.probabilities_when(keep, "unk")[0], unk, rtol=1e-6, atol=1e-6)
