"""MultiHeadAttention packs its q/k/v weights on first use: under DistributedDataParallel that first use comes after
the wrapper (its reducer and gradient buckets) is built, and training must be unchanged. One gloo process in this
process (world size 1) keeps it quick; the project's two-process DDP tests cover the gradient averaging."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from attnkit import MultiHeadAttention
from attnkit.functional.packed_linear import packed_view

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="needs gloo")


def _fresh_module() -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(16, 4).double().float()  # new storage: unpacked until its first call


def _train(model: torch.nn.Module) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        optimizer.zero_grad()
        model(torch.randn(4, 5, 16, generator=g)).context.square().mean().backward()
        optimizer.step()


def test_packing_after_the_ddp_wrapper_trains_as_the_plain_module(tmp_path):
    plain = _fresh_module()
    _train(plain)
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        module = _fresh_module()
        projections = [module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]
        assert packed_view(projections) is None
        _train(DistributedDataParallel(module))
    finally:
        dist.destroy_process_group()
    assert packed_view([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]) is not None
    for name, expected in plain.state_dict().items():
        torch.testing.assert_close(module.state_dict()[name], expected, atol=1e-6, rtol=1e-5, msg=name)
