"""The workloads whose instructions :mod:`bench.instruction_counts` counts, run as a script inside callgrind.

``python workloads.py LIBRARY NAME [NAME ...]``: for each workload, one warm-up call, then callgrind's counters are
zeroed, ``ITERATIONS`` calls run, and the counters are dumped under the workload's name (``LIBRARY`` is the compiled
``client_requests.c``; ``-`` runs without callgrind, as the tests do). Only attnkit's public API, so the same script
runs against any revision put first on ``PYTHONPATH``. Sizes are small on purpose: the kernels are the same torch
build under both revisions, so Python-side overhead, where a change of attnkit shows, must not drown in them.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

import torch
from torch import nn

from attnkit import MultiHeadAttention, masks
from attnkit.decoding import greedy
from attnkit.functional import additive_scores, masked_softmax
from attnkit.models import TransformerSeq2Seq
from attnkit.models.encoders import TransformerEncoder

ITERATIONS = 5


def _lengths(batch: int, longest: int) -> torch.Tensor:
    return torch.randint(max(1, longest // 4), longest + 1, (batch,))  # [B], no empty rows


def mha() -> Callable[[], object]:
    """Self-attention forward + backward with a key-padding mask: E 64, 4 heads, B 4, T 32."""
    module, x = MultiHeadAttention(64, 4), torch.randn(4, 32, 64, requires_grad=True)
    mask = masks.lengths_to_mask(_lengths(4, 32), 32)  # [B, T]
    return lambda: module(x, key_mask=mask).context.sum().backward()


def mha_packed() -> Callable[[], object]:
    """The same with ``query_mask``: real rows packed."""
    module, x = MultiHeadAttention(64, 4), torch.randn(4, 32, 64, requires_grad=True)
    mask = masks.lengths_to_mask(_lengths(4, 32), 32)
    return lambda: module(x, key_mask=mask, query_mask=mask).context.sum().backward()


def softmax() -> Callable[[], object]:
    """``masked_softmax`` over [4, 4, 32, 32] with a key mask."""
    scores = torch.randn(4, 4, 32, 32)
    mask = masks.lengths_to_mask(_lengths(4, 32), 32)[:, None, None, :]  # [B, 1, 1, Tk]
    return lambda: masked_softmax(scores, mask)


def additive() -> Callable[[], object]:
    """Chunked additive scores forward + backward: [2, 16, 16] queries and keys, hidden 16."""
    wq, uk = torch.randn(2, 16, 16, requires_grad=True), torch.randn(2, 16, 16, requires_grad=True)
    v = torch.randn(16, requires_grad=True)
    return lambda: additive_scores(wq, uk, v).sum().backward()


def decode() -> Callable[[], object]:
    """Cached greedy decoding, 16 steps: d 64, 2 decoder layers, vocabulary 500, B 4, 16 source tokens."""
    model = TransformerSeq2Seq(500, 500, dim=64, heads=4, encoder_layers=1, decoder_layers=2, ff_dim=128).eval()
    source = torch.randint(4, 500, (4, 16))
    source_mask = torch.ones_like(source, dtype=torch.bool)
    return lambda: greedy(model, source, source_mask, max_len=16, eos_id=-1)


def encoder_packed() -> Callable[[], object]:
    """A packed encoder training step (forward + backward, dropout 0.1): d 64, 2 layers, 85 real tokens."""
    encoder = TransformerEncoder(64, 4, 2, ff_dim=128, dropout=0.1, norm_first=False, activation=nn.ReLU)
    lengths = torch.tensor([40, 20, 15, 10])
    x = torch.randn(int(lengths.sum()), 64, requires_grad=True)
    return lambda: encoder.forward_packed(x, lengths).pow(2).mean().backward()


WORKLOADS: dict[str, Callable[[], Callable[[], object]]] = {
    f.__name__: f for f in (mha, mha_packed, softmax, additive, decode, encoder_packed)
}


def main(argv: list[str]) -> None:
    """Run the named workloads, bracketing each one's timed calls with callgrind's zero and dump requests."""
    library, names = argv[0], argv[1:]
    requests = None if library == "-" else ctypes.CDLL(library)
    torch.set_num_threads(1)
    for name in names:
        torch.manual_seed(0)
        step = WORKLOADS[name]()
        step()  # warm-up: first-call allocations and lazy initialisation stay out of the count
        if requests is not None:
            requests.attnkit_cg_zero()
        for _ in range(ITERATIONS):
            step()
        if requests is not None:
            requests.attnkit_cg_dump(name.encode())
        print(name, "done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
