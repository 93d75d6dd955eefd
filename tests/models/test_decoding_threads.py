"""Decoding with the batch split across Python threads (``attnkit.decoding_threads``) against one call over the
whole batch, its reference: the same hypotheses token for token, the same scores, weights and flags, and the
caller's torch thread count left as it was."""

import pytest
import torch

from attnkit.decoding import beam_search, greedy
from attnkit.decoding_threads import decode_in_threads
from attnkit.models.transformer.seq2seq import build_transformer_seq2seq

VOCAB = 29


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py: tiny models, one torch thread


def model():
    torch.manual_seed(0)
    model = build_transformer_seq2seq(
        VOCAB, VOCAB, dim=32, heads=4, encoder_layers=1, decoder_layers=2, tie_output=False
    )
    with torch.no_grad():  # larger output weights: tokens that move, and rows that end at different steps
        model.output.weight.mul_(6.0)
    return model.eval()


def sources(lengths=(7, 3, 5, 1, 6)):
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(4, VOCAB, (len(lengths), max(lengths)), generator=g)
    return ids, torch.arange(max(lengths)) < torch.tensor(lengths)[:, None]


def eos_for(m, ids, mask):
    """A token the model emits early in row 0: as ``<eos>``, rows end at different steps (the stitching pads)."""
    return int(greedy(m, ids, mask, max_len=10, eos_id=-1).best[0, 2])


def assert_same(got, want):
    assert torch.equal(got.tokens, want.tokens)
    assert torch.equal(got.lengths, want.lengths) and torch.equal(got.finished, want.finished)
    torch.testing.assert_close(got.scores, want.scores, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(got.log_probs, want.log_probs, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("threads", [2, 3, 8])
@pytest.mark.parametrize("beams", [1, 3])
def test_split_decoding_gives_the_whole_batchs_hypotheses(threads, beams):
    m, (ids, mask) = model(), sources()
    decode, options = (greedy, {}) if beams == 1 else (beam_search, {"beam_size": beams})
    options["eos_id"] = eos_for(m, ids, mask)
    want = decode(m, ids, mask, max_len=10, **options)
    got = decode_in_threads(decode, m, ids, mask, threads=threads, max_len=10, **options)
    assert want.finished.any() and not want.finished.all()  # rows of different lengths: the stitching pads
    assert_same(got, want)


def test_split_decoding_stitches_the_attention_weights_and_the_padding():
    m, (ids, mask) = model(), sources()
    options = {"max_len": 10, "need_weights": True, "pad_id": 0, "eos_id": eos_for(m, ids, mask)}
    want = greedy(m, ids, mask, **options)
    got = decode_in_threads(greedy, m, ids, mask, threads=2, **options)
    assert want.lengths.min() < 10
    assert_same(got, want)
    torch.testing.assert_close(got.attention, want.attention, atol=1e-6, rtol=1e-5)


def test_the_callers_thread_count_is_left_alone_and_bad_counts_are_refused():
    m, (ids, mask) = model(), sources()
    torch.set_num_threads(2)
    decode_in_threads(greedy, m, ids, mask, threads=2, max_len=4)
    assert torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="threads must be >= 1"):
        decode_in_threads(greedy, m, ids, mask, threads=0)
