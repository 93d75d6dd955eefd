import pytest
import torch

from attnkit import masks


def test_lengths_to_mask_marks_the_first_lengths_positions():
    mask = masks.lengths_to_mask(torch.tensor([3, 0, 1]), max_len=4)
    expected = torch.tensor([[1, 1, 1, 0], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(mask, expected)
    assert masks.lengths_to_mask(torch.tensor([2, 1])).shape == (2, 2)


@pytest.mark.parametrize(
    ("lengths", "max_len", "message"),
    [
        (torch.tensor([2, -1]), None, "lengths must be >= 0"),
        (torch.tensor([2, 5]), 4, "beyond max_len=4"),
        (torch.tensor([[2, 5]]), None, "lengths must be 1-D"),
        (torch.tensor([2.0, 1.0]), None, "integer tensor"),
    ],
)
def test_lengths_to_mask_rejects_bad_lengths(lengths, max_len, message):
    with pytest.raises(ValueError, match=message):
        masks.lengths_to_mask(lengths, max_len)


def test_causal_square_is_lower_triangular():
    assert torch.equal(masks.causal(3), torch.ones(3, 3, dtype=torch.bool).tril())


def test_causal_is_bottom_right_aligned_for_a_cache():
    # 2 new queries after 3 cached steps: query 0 is position 3, query 1 is position 4.
    expected = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(masks.causal(2, 5), expected)
    # the last query always sees every key
    assert masks.causal(1, 7).all()


def test_window_around_aligned_positions_and_given_centres():
    w = masks.window(4, 4, left=1, right=0)
    assert torch.equal(w, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]], dtype=torch.bool))
    w = masks.window(1, 6, left=1, right=1, centers=torch.tensor([[2.4]]))
    assert torch.equal(w, torch.tensor([[[0, 1, 1, 1, 0, 0]]], dtype=torch.bool))


def test_combine_ands_after_broadcasting_and_skips_none():
    key = torch.tensor([[1, 1, 0]], dtype=torch.bool)[:, None, :]  # [1, 1, 3]
    combined = masks.combine(key, masks.causal(3), None)
    assert combined.shape == (1, 3, 3)
    assert torch.equal(combined[0], torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 0]], dtype=torch.bool))
    assert masks.combine(None, None) is None


def test_combine_names_shapes_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):
        masks.combine(torch.ones(2, 3, dtype=torch.bool), torch.ones(4, dtype=torch.bool))


def test_float_masks_are_refused_with_the_argument_name():
    with pytest.raises(ValueError, match=r"mask.*BoolTensor.*float32"):
        masks.check_mask(torch.ones(2, 3), "mask", (2, 3))
    with pytest.raises(ValueError, match="key_mask"):
        masks.attention_mask((2, 3, 4), key_mask=torch.ones(2, 4))


def test_attention_mask_checks_shapes_and_names_them():
    with pytest.raises(ValueError, match=r"key_mask must have shape \[B, Tk\] = \(2, 4\), got \(2, 5\)"):
        masks.attention_mask((2, 3, 4), key_mask=torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask with shape"):
        masks.attention_mask((2, 3, 4), attn_mask=torch.ones(3, 3, dtype=torch.bool))


def test_attention_mask_combines_key_query_and_attn_masks_with_heads():
    key_mask = torch.tensor([[1, 1, 0]], dtype=torch.bool)
    query_mask = torch.tensor([[1, 0]], dtype=torch.bool)
    mask = masks.attention_mask((1, 4, 2, 3), key_mask=key_mask, query_mask=query_mask, attn_mask=masks.causal(2, 3))
    expected = torch.tensor([[1, 1, 0], [0, 0, 0]], dtype=torch.bool)
    assert torch.equal(mask.expand(1, 4, 2, 3)[0, 2], expected)
