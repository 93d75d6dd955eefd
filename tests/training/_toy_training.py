"""A toy classification objective for the training-loop tests, importable and runnable as a training script.

Three Gaussian clusters in 8 dimensions, a 2-layer MLP with dropout, cross-entropy. ``python _toy_training.py
--checkpoint-dir D --out result.json [--resume] [--sleep S]`` trains it with ``fit`` (under ``torchrun`` too: each
rank takes its slice of every global batch and of the validation set) and writes the FitResult as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.training.distributed import init_distributed, shutdown_distributed
from attnkit.training.loop import FitConfig, FitResult, fit
from attnkit.training.seeding import seed_everything

DIM, CLASSES = 8, 3
Batch = dict[str, torch.Tensor]


def make_data(*, n_train: int = 192, n_valid: int = 95, seed: int = 1234) -> tuple[Batch, Batch]:
    """Train and validation splits: ``{"x": [N, DIM], "y": [N]}``, overlapping clusters (accuracy well below 1)."""
    generator = torch.Generator().manual_seed(seed)
    centres = 1.2 * torch.randn(CLASSES, DIM, generator=generator)

    def draw(n: int) -> Batch:
        y = torch.randint(CLASSES, (n,), generator=generator)
        return {"x": centres[y] + torch.randn(n, DIM, generator=generator), "y": y}

    return draw(n_train), draw(n_valid)


class ToyModel(nn.Module):
    """Linear → ReLU → Dropout → Linear."""

    def __init__(self, hidden: int = 16, dropout: float = 0.1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ToyObjective:
    """Cross-entropy training; accuracy and mean loss from additive sums (exact under DDP)."""

    def __init__(self, model: nn.Module, *, sleep: float = 0.0):
        self.model = model
        self.sleep = sleep

    def loss(self, batch: Batch) -> torch.Tensor:
        if self.sleep:
            time.sleep(self.sleep)
        return F.cross_entropy(self.model(batch["x"]), batch["y"])

    def evaluate_sums(self, batches: Iterable[Batch]) -> dict[str, float]:
        correct = count = loss_sum = 0.0
        for batch in batches:
            logits = self.model(batch["x"])
            correct += (logits.argmax(-1) == batch["y"]).sum().item()
            count += len(batch["y"])
            loss_sum += F.cross_entropy(logits, batch["y"], reduction="sum").item()
        return {"correct": correct, "count": count, "loss_sum": loss_sum}

    def metrics_from_sums(self, sums: Mapping[str, float]) -> dict[str, float]:
        return {"accuracy": 100 * sums["correct"] / sums["count"], "loss": sums["loss_sum"] / sums["count"]}

    def evaluate(self, batches: Iterable[Batch]) -> dict[str, float]:
        return self.metrics_from_sums(self.evaluate_sums(batches))


def batch_functions(
    train: Batch,
    valid: Batch,
    global_batch: int,
    *,
    rank: int = 0,
    world_size: int = 1,
    shuffle_with_global_rng: bool = False,
) -> tuple[Callable[[int], Iterator[Batch]], Callable[[], Iterator[Batch]]]:
    """``train_batches(epoch)`` and ``valid_batches()``; rank ``r`` of ``N`` takes items ``r, r + N, ...``.

    The shuffle uses the global generator (which ``fit`` reseeds every epoch) when asked — as a DataLoader with
    ``shuffle=True`` does — or else a generator seeded by the epoch, the same on every rank, as samplers do.
    """
    n = len(train["y"])

    def train_batches(epoch: int) -> Iterator[Batch]:
        if shuffle_with_global_rng:
            order = torch.randperm(n)
        else:
            order = torch.randperm(n, generator=torch.Generator().manual_seed(10_000 + epoch))
        for start in range(0, n - global_batch + 1, global_batch):
            index = order[start : start + global_batch][rank::world_size]
            yield {"x": train["x"][index], "y": train["y"][index]}

    def valid_batches() -> Iterator[Batch]:
        index = torch.arange(len(valid["y"]))[rank::world_size]
        for start in range(0, len(index), 16):
            part = index[start : start + 16]
            yield {"x": valid["x"][part], "y": valid["y"][part]}

    return train_batches, valid_batches


def run(
    config: FitConfig,
    *,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
    global_batch: int = 16,
    dropout: float = 0.1,
    sleep: float = 0.0,
    shuffle_with_global_rng: bool = True,
) -> tuple[FitResult, nn.Module]:
    """Build the toy model (seeded), train it with ``fit`` on this rank's shard, and return the result and model."""
    context = init_distributed()
    seed_everything(config.seed)
    model = ToyModel(dropout=dropout)
    train, valid = make_data()
    train_batches, valid_batches = batch_functions(
        train,
        valid,
        global_batch,
        rank=context.rank,
        world_size=context.world_size,
        shuffle_with_global_rng=shuffle_with_global_rng,
    )
    result = fit(
        ToyObjective(model, sleep=sleep),
        train_batches,
        valid_batches,
        config,
        checkpoint_dir=checkpoint_dir,
        resume=resume,
        model_config={"hidden": 16, "dropout": dropout},
    )
    return result, model


def main(argv: list[str] | None = None) -> None:
    """Command line: train, then write the FitResult as JSON (rank 0)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--global-batch", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep in every training step")
    parser.add_argument("--epoch-shuffle", action="store_true", help="shuffle with an epoch-seeded generator")
    parser.add_argument("--accumulate", type=int, default=1, help="batches per optimiser step")
    parser.add_argument("--save-every", type=int, default=None, help="also save last/ every this many steps")
    parser.add_argument("--max-minutes", type=float, default=None, help="the run's time budget")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    config = FitConfig(
        epochs=args.epochs,
        lr=0.01,
        patience=None,
        progress=False,
        seed=7,
        select_metric="accuracy",
        accumulate=args.accumulate,
        save_every=args.save_every,
        max_minutes=args.max_minutes,
    )
    result, _ = run(
        config,
        checkpoint_dir=args.checkpoint_dir,
        resume=args.resume,
        global_batch=args.global_batch,
        dropout=args.dropout,
        sleep=args.sleep,
        shuffle_with_global_rng=not args.epoch_shuffle,
    )
    if init_distributed().is_main:
        Path(args.out).write_text(json.dumps(result.to_dict()))
    shutdown_distributed()


if __name__ == "__main__":
    main()
