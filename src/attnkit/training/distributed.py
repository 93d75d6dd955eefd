"""Multi-process training with ``torchrun``: process group, DDP wrapping, exact metric reduction (layer 5).

Launch any training script with ``torchrun --nproc-per-node N script.py`` (or ``python -m torch.distributed.run``).
torchrun sets ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``; when
``WORLD_SIZE > 1``, :func:`init_distributed` joins the process group (``nccl`` when CUDA is available, each
process on ``cuda:LOCAL_RANK``; ``gloo`` on the CPU). With ``WORLD_SIZE`` unset or 1 everything here is a no-op,
so one code path serves one process and many.

Every collective here is called by all ranks in the same order, and every decision taken from its result
(stop for time, early stopping, a divergence error) is therefore the same on all ranks: no rank is left waiting.
"""

from __future__ import annotations

import atexit
import os
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from attnkit.runtime.torchrun_env import torchrun_env

__all__ = [
    "DistributedContext",
    "all_reduce_sums",
    "any_rank",
    "barrier",
    "check_replicas_in_sync",
    "gather_objects",
    "init_distributed",
    "shutdown_distributed",
    "wrap_model",
]


@dataclass(frozen=True)
class DistributedContext:
    """Where this process stands: its rank among ``world_size`` processes (rank 0 writes checkpoints and shows
    progress), its rank on this machine, and the device it computes on (``cuda:local_rank`` under nccl, else CPU)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @property
    def is_distributed(self) -> bool:
        """True when more than one process takes part."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on rank 0, the process that writes files and prints."""
        return self.rank == 0


def init_distributed(backend: str | None = None) -> DistributedContext:
    """Join the process group described by torchrun's environment variables, once; return this process's context.

    Idempotent: if the group already exists (the caller initialised it, or an earlier call did), its context is
    returned. Without ``WORLD_SIZE > 1`` in the environment it returns the single-process context. ``backend``
    defaults to nccl when CUDA is available, gloo otherwise.
    """
    if dist.is_available() and dist.is_initialized():
        return _context(dist.get_backend())
    world_size = torchrun_env().world_size
    if world_size <= 1:
        return DistributedContext()
    if not dist.is_available():
        raise RuntimeError(f"WORLD_SIZE={world_size} but this torch build has no torch.distributed support")
    missing = [name for name in ("RANK", "MASTER_ADDR", "MASTER_PORT") if name not in os.environ]
    if missing:
        raise RuntimeError(
            f"WORLD_SIZE={world_size} but {', '.join(missing)} not set; launch with `torchrun --nproc-per-node N`"
        )
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl":
        torch.cuda.set_device(torchrun_env().local_rank)
    dist.init_process_group(backend=backend, init_method="env://")
    # Left to interpreter shutdown, the group's C++ threads can be torn down while still joinable, and the rank
    # dies with "terminate called without an active exception" (SIGABRT) after finishing its work.
    atexit.register(shutdown_distributed)
    return _context(backend)


def _context(backend: str) -> DistributedContext:
    local_rank = torchrun_env().local_rank
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    return DistributedContext(dist.get_rank(), dist.get_world_size(), local_rank, device)


def shutdown_distributed() -> None:
    """Leave the process group if one exists (call once at the end of a distributed program)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap_model(model: nn.Module, context: DistributedContext, *, find_unused_parameters: bool = False) -> nn.Module:
    """``DistributedDataParallel(model)`` when distributed, ``model`` itself otherwise.

    DDP broadcasts rank 0's parameters and buffers at construction and averages gradients over ranks during
    ``backward``, so with equal per-rank batch sizes a step equals one process's step on the global batch.
    The model must already be on ``context.device``.
    """
    if not context.is_distributed:
        return model
    device_ids = [context.device.index] if context.device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids, find_unused_parameters=find_unused_parameters)


def barrier(context: DistributedContext) -> None:
    """Wait until every rank gets here (e.g. until rank 0 has written a checkpoint)."""
    if context.is_distributed:
        dist.barrier()


def any_rank(flag: bool, context: DistributedContext) -> bool:
    """True on every rank when ``flag`` is true on at least one (a collective: every rank must call it)."""
    if not context.is_distributed:
        return flag
    value = torch.tensor([1.0 if flag else 0.0], device=context.device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item() > 0)


def gather_objects(value: Any, context: DistributedContext) -> list[Any]:
    """``value`` of every rank, in rank order, on every rank (a collective); ``[value]`` in a single process."""
    if not context.is_distributed:
        return [value]
    gathered: list[Any] = [None] * context.world_size
    dist.all_gather_object(gathered, value)
    return gathered


def all_reduce_sums(values: Mapping[str, float], context: DistributedContext) -> dict[str, float]:
    """Sum additive statistics (counts of correct items, summed losses, n-gram matches, ...) over all ranks.

    Summing the statistics, then computing the metric from the totals, gives exactly the metric of the whole
    split (unlike averaging per-rank averages). Sums are taken in float64, so counts below 2**53 stay exact. Ranks
    passing different keys all raise ``ValueError``.
    """
    if not context.is_distributed:
        return {key: float(value) for key, value in values.items()}
    keys = sorted(values)
    fingerprint = float(zlib.crc32("\n".join(keys).encode("utf-8")))
    check = torch.tensor([fingerprint, -fingerprint, len(keys), -len(keys)], dtype=torch.float64, device=context.device)
    dist.all_reduce(check, op=dist.ReduceOp.MAX)
    if check[0] != -check[1] or check[2] != -check[3]:
        raise ValueError(f"ranks reduce different metric keys (rank {context.rank} has {keys})")
    totals = torch.tensor([float(values[key]) for key in keys], dtype=torch.float64, device=context.device)
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    return dict(zip(keys, totals.tolist(), strict=True))


def check_replicas_in_sync(model: nn.Module, context: DistributedContext, *, where: str) -> None:
    """Raise on every rank if the replicas' parameters differ (their sums are compared in float64).

    Replicas drift apart when gradients are not averaged — typically because the forward pass bypassed the
    DistributedDataParallel wrapper (an objective that calls ``self.model.encoder(...)`` rather than ``self.model(...)``).
    """
    if not context.is_distributed:
        return
    with torch.no_grad():
        total = sum((p.detach().double().sum() for p in model.parameters()), torch.zeros((), dtype=torch.float64))
    total = total.to(context.device)
    spread = torch.stack([total, -total])
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    if spread[0] != -spread[1]:
        raise RuntimeError(
            f"{where}: the model replicas have diverged across ranks (parameter sums from {-spread[1].item()!r} to "
            f"{spread[0].item()!r}). Gradients were not averaged: Objective.loss must run the model as "
            "`self.model(...)`, which fit() points at the DistributedDataParallel wrapper during training; each "
            "rank must also see the same number of batches per epoch"
        )
