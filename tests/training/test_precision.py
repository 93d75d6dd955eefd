"""``attnkit.training.precision`` and the loop's use of it: device names resolved or refused in one line, autocast
only when asked (fp32 adds nothing), fp16's GradScaler skipping a step with inf gradients where fp32 and bf16
raise, the scaler's state resumed, the precision a resumed run must keep, and a model on another device than its
DDP group refused."""

from __future__ import annotations

import math
from contextlib import nullcontext

import pytest
import torch
from _toy_training import ToyModel, ToyObjective, batch_functions, make_data
from torch import nn

from attnkit.checkpointing import read_trainer_state
from attnkit.runtime.devices import autocast, check_precision, resolve_device, to_device, to_host
from attnkit.tasks.options import PRECISIONS as CLI_PRECISIONS
from attnkit.training.distributed import DistributedContext
from attnkit.training.loop import FitConfig, _training_device, fit
from attnkit.training.precision import PRECISIONS, grad_scaler, place_model

CPU = torch.device("cpu")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: nothing to refuse")
CUDA = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA not available: torch.cuda.is_available() is False"
)
QUIET = {"progress": False, "seed": 3, "lr": 0.01, "patience": None}


def test_the_command_line_offers_the_precisions_the_loop_knows():
    assert CLI_PRECISIONS == PRECISIONS == ("fp32", "bf16", "fp16")


def test_auto_and_cpu_resolve_to_the_cpu_without_cuda():
    assert resolve_device("cpu") == CPU
    assert resolve_device(torch.device("cpu")) == CPU
    if not torch.cuda.is_available():
        assert resolve_device("auto") == CPU


@NO_CUDA
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_is_refused_in_one_line_when_absent(name):
    message = f"--device {name}: CUDA is not available here (torch.cuda.is_available() is False)"
    with pytest.raises(ValueError) as error:
        resolve_device(name)
    assert str(error.value) == message


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="this machine has MPS: nothing to refuse")
def test_mps_is_refused_in_one_line_when_absent():
    with pytest.raises(ValueError, match=r"^--device mps: MPS is not available here"):
        resolve_device("mps")


@pytest.mark.parametrize("name", ["tpu", "gpu", "cuda:x", ""])
def test_unknown_device_names_are_refused_naming_the_choices(name):
    with pytest.raises(ValueError, match=r"expected auto, cpu, cuda, cuda:N or mps"):
        resolve_device(name)


@CUDA
def test_cuda_resolves_with_its_index_and_auto_prefers_it():
    assert resolve_device("cuda") == torch.device("cuda", torch.cuda.current_device())
    assert resolve_device("auto").type == "cuda"
    with pytest.raises(ValueError, match=r"this machine has \d+ CUDA device"):
        resolve_device(f"cuda:{torch.cuda.device_count()}")


def test_fp32_is_a_nullcontext_and_the_others_autocast_on_the_device():
    assert isinstance(autocast(CPU, "fp32"), nullcontext)
    linear = nn.Linear(4, 4)
    for precision, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        with autocast(CPU, precision):
            assert torch.is_autocast_enabled("cpu")
            assert linear(torch.randn(2, 4)).dtype == dtype
    assert linear(torch.randn(2, 4)).dtype == torch.float32  # nothing left switched on


def test_a_scaler_for_fp16_only_and_precisions_checked():
    assert grad_scaler(CPU, "fp32") is None and grad_scaler(CPU, "bf16") is None
    scaler = grad_scaler(CPU, "fp16")
    assert isinstance(scaler, torch.amp.GradScaler) and scaler.is_enabled()
    for precision in PRECISIONS:
        check_precision(precision, CPU)
    with pytest.raises(ValueError, match=r"--precision fp8: expected one of fp32, bf16, fp16"):
        check_precision("fp8", CPU)
    with pytest.raises(ValueError, match=r"precision must be one of 'fp32', 'bf16', 'fp16', got 'half'"):
        FitConfig(precision="half")


def test_batches_stay_put_on_the_cpu_and_results_come_home_in_float32():
    batch = {"x": torch.ones(2)}
    assert to_device(batch, CPU) is batch
    half = torch.ones(2, 3, dtype=torch.bfloat16, requires_grad=True) * 2
    home = to_host({"w": [half, (half, 7)], "ids": torch.arange(3)})
    assert home["w"][0].dtype == torch.float32 and not home["w"][0].requires_grad
    assert home["w"][1][1] == 7 and home["ids"].dtype == torch.long
    torch.testing.assert_close(home["w"][1][0], torch.full((2, 3), 2.0))


def train_toy(config: FitConfig, *, objective_class=ToyObjective, checkpoint_dir=None, resume=False):
    torch.manual_seed(config.seed)
    model = ToyModel(dropout=0.0)
    train, valid = make_data(n_train=64, n_valid=32)
    train_batches, valid_batches = batch_functions(train, valid, 16)
    objective = objective_class(model)
    result = fit(objective, train_batches, valid_batches, config, checkpoint_dir=checkpoint_dir, resume=resume)
    return result, model


@pytest.mark.parametrize("precision", PRECISIONS)
def test_every_precision_trains_float32_weights_close_to_fp32(precision):
    reference, reference_model = train_toy(FitConfig(epochs=2, **QUIET))
    result, model = train_toy(FitConfig(epochs=2, precision=precision, **QUIET))
    assert result.device == "cpu"
    assert all(parameter.dtype == torch.float32 for parameter in model.parameters())
    losses = [record.train_loss for record in result.history]
    assert all(math.isfinite(loss) for loss in losses)
    expected = [record.train_loss for record in reference.history]
    if precision == "fp32":  # no autocast: the very same run
        assert losses == expected
        return
    assert losses != expected  # autocast acted: bf16 keeps 8 bits of mantissa, fp16 11
    assert losses == pytest.approx(expected, rel=5e-3)  # measured: 3e-4 (bf16), 4e-5 (fp16)
    # AdamW divides by the gradients' size, so rounding moves small weights by up to ~lr per step (0.04 measured)
    atol = 0.1 if precision == "bf16" else 1e-3
    for got, want in zip(model.parameters(), reference_model.parameters(), strict=True):
        torch.testing.assert_close(got, want, atol=atol, rtol=0.0)


class InfiniteOnce(ToyObjective):
    """The toy objective whose first batch has an infinite loss (so inf/NaN gradients), then behaves; it keeps a copy of
    the weights at every validation."""

    calls = 0

    def __init__(self, model: nn.Module) -> None:
        super().__init__(model)
        self.snapshots: list[dict[str, torch.Tensor]] = []

    def loss(self, batch):
        loss = super().loss(batch)
        InfiniteOnce.calls += 1
        return loss * math.inf if InfiniteOnce.calls == 1 else loss

    def evaluate_sums(self, batches):
        self.snapshots.append({name: value.clone() for name, value in self.model.state_dict().items()})
        return super().evaluate_sums(batches)


def test_fp16_skips_a_step_with_inf_gradients_where_fp32_and_bf16_raise():
    for precision in ("fp32", "bf16"):
        InfiniteOnce.calls = 0
        with pytest.raises(FloatingPointError, match="epoch 1, step 1: gradient norm"):
            train_toy(FitConfig(epochs=1, precision=precision, **QUIET), objective_class=InfiniteOnce)

    InfiniteOnce.calls = 0
    torch.manual_seed(QUIET["seed"])
    model = ToyModel(dropout=0.0)
    initial = {name: value.clone() for name, value in model.state_dict().items()}
    train, valid = make_data(n_train=64, n_valid=32)
    train_batches, valid_batches = batch_functions(train, valid, 16)
    objective = InfiniteOnce(model)
    # epoch 1 is the infinite batch alone; epoch 2 the ordinary ones
    batches = lambda epoch: list(train_batches(epoch))[:1] if epoch == 1 else train_batches(epoch)  # noqa: E731
    result = fit(objective, batches, valid_batches, FitConfig(epochs=2, precision="fp16", **QUIET))
    assert [record.steps for record in result.history] == [1, 4]  # the skipped step counts as a step
    assert math.isinf(result.history[0].train_loss) and math.isfinite(result.history[1].train_loss)
    for name, value in initial.items():
        assert torch.equal(objective.snapshots[0][name], value), name  # the skipped step changed nothing
        assert not torch.equal(objective.snapshots[1][name], value), name  # the next ones trained
        assert torch.isfinite(objective.snapshots[1][name]).all(), name


def test_the_fp16_scaler_state_is_saved_in_last_and_resumed(tmp_path):
    InfiniteOnce.calls = 0
    config = FitConfig(epochs=1, precision="fp16", **QUIET)
    train_toy(config, objective_class=InfiniteOnce, checkpoint_dir=tmp_path)
    saved = read_trainer_state(tmp_path / "last")["grad_scaler"]
    assert saved["scale"] == 65536.0 * 0.5  # the default start, halved once by the skipped step
    resumed, _ = train_toy(FitConfig(epochs=2, precision="fp16", **QUIET), checkpoint_dir=tmp_path, resume=True)
    assert resumed.resumed_from == 1 and len(resumed.history) == 2
    assert read_trainer_state(tmp_path / "last")["grad_scaler"]["scale"] == 65536.0 * 0.5  # restored, not reset


def test_a_run_resumes_only_in_the_precision_it_started_with(tmp_path):
    train_toy(FitConfig(epochs=1, **QUIET), checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match=r"precision='fp32' then, 'bf16' now"):
        train_toy(FitConfig(epochs=2, precision="bf16", **QUIET), checkpoint_dir=tmp_path, resume=True)


def test_a_model_elsewhere_than_its_ddp_group_is_refused():
    group_on_cpu = DistributedContext(rank=0, world_size=2, device=CPU)
    model = nn.Linear(2, 2)
    assert _training_device(model, group_on_cpu) == CPU
    with pytest.raises(ValueError, match=r"the model is on meta but this process's DDP group computes on cpu"):
        _training_device(model.to("meta"), group_on_cpu)


def test_place_model_moves_the_model_and_refuses_torchrun_on_other_devices(monkeypatch):
    model = nn.Linear(2, 2)
    assert place_model(model, "cpu") == CPU
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr("attnkit.training.precision.resolve_device", lambda device: torch.device("mps"))
    with pytest.raises(ValueError, match=r"torchrun training runs on CUDA \(nccl\) or the CPU \(gloo\)"):
        place_model(model, "mps")


@CUDA
def test_fit_trains_where_the_model_is_on_cuda():
    torch.manual_seed(0)
    model = ToyModel(dropout=0.0)
    place_model(model, "cuda")
    train, valid = make_data(n_train=64, n_valid=32)
    train_batches, valid_batches = batch_functions(train, valid, 16)  # CPU batches: fit moves them
    result = fit(ToyObjective(model), train_batches, valid_batches, FitConfig(epochs=1, precision="fp16", **QUIET))
    assert result.device.startswith("cuda") and all(p.is_cuda for p in model.parameters())
