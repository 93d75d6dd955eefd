"""The one place that decides what ``attnkit train TASK`` will write, and checks all of it first (layer 5; no torch).

    plan = plan_run(args, command="train classify", inputs={"data": (args.data, False)}, writes=CLASSIFY_WRITES)
    ...                                   # the task's own checks: data read, embeddings' size, ...
    with plan.writing():                  # the first byte is written here
        train(...)

:func:`plan_run` checks, before anything is written or deleted: ``--out`` (a directory or nothing, not inside a
file, not a checkpoint, writable), ``--tensorboard``'s log directory, every input file (readable; hashed), that no
live process is writing ``--out`` (:mod:`attnkit.tasks.run.lock`), and what is already there:

- a run (``metrics.json``, ``best/`` or ``last/``) needs ``--resume`` or ``--overwrite``;
- ``--resume`` needs ``last/``, and the run's manifest (:mod:`attnkit.tasks.run.manifest`) must record the same
  command, settings and inputs (path and content) as this one: every difference is named. Only the settings of
  :data:`MAY_CHANGE` may differ (a longer run, another device, ...). A setting the run's manifest does not record
  belongs to an option added to attnkit after the run started: :data:`ADDED_LATER` gives the value that reproduces
  how such runs were trained, and the new command is compared with it;
- ``--overwrite`` replaces what the run's manifest lists, nothing else, and only if all of it can be removed.

:meth:`RunPlan.writing` takes the lock, moves the replaced run aside (``.attnkit-replaced-PID``), writes the new
manifest, and runs the training. If the training fails before its first checkpoint, what it wrote is removed and
the replaced run moved back, byte for byte; otherwise the replaced run is deleted. Under ``torchrun`` only rank 0
locks and writes.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.tasks.run.lock import acquire, check_unlocked, pid_is_running
from attnkit.tasks.run.manifest import (
    LEGACY_RUN_ENTRIES,
    MANIFEST_FILE,
    InputRecord,
    RunManifest,
    differences,
    input_record,
    read_manifest,
    write_manifest,
)

__all__ = ["ADDED_LATER", "DISPATCH", "MAY_CHANGE", "RUN_MARKERS", "RunPlan", "plan_run", "train_writes"]

# what marks a directory as an attnkit run (a finished or interrupted one)
RUN_MARKERS = ("metrics.json", "best", "last")
# settings a resumed run may change: how long it runs, where, how it reports; not what it computes
MAY_CHANGE = ("epochs", "patience", "max_minutes", "device", "threads", "no_progress", "debug", "tensorboard",
              "resume", "overwrite", "no_test", "out", "save_every", "save_every_minutes")  # fmt: skip
# Options added after runs began to record manifests -> the value that means "as runs were trained before the option
# existed" (--valid-seed None follows --seed; --scan-mb 64 changes only a streamed file's first pass).
ADDED_LATER = {
    "valid_seed": None,
    "scan_mb": 64,
    "attention_distribution": "softmax",
    "task_scaling": "none",
    "encoder_diversity": 0.0,
    "attention_values": "states",
    "value_layer": 0,
    "distill_from": None,
    "distill_beam": None,
    "distill_gold": False,
    "distill_unlabelled": None,
    "distill_max_unlabelled": None,
    "distill_token_weight": None,
}
# argparse's sub-command fields: what the manifest's ``command`` already records ("train classify"). A run started by
# ``attnkit train classify`` has them and one started in process by ``attnkit experiment`` has not; neither is a setting.
DISPATCH = ("command", "task")
REPLACED_PREFIX = ".attnkit-replaced-"
_CHECKPOINT_FILES = ("config.json", "model.safetensors")


def train_writes(args: argparse.Namespace, *own: str) -> tuple[str, ...]:
    """What every training run writes into ``--out`` (``best``, ``last``, ``metrics.json``, ``metrics.csv``,
    ``tensorboard`` when asked), and the task's ``own`` entries (its tokeniser directory)."""
    tensorboard = ("tensorboard",) if getattr(args, "tensorboard", False) else ()
    return ("best", "last", "metrics.json", "metrics.csv", *own, *tensorboard)


@dataclass
class RunPlan:
    """What a training command will do to its run directory, checked (see the module docstring)."""

    out: Path
    mode: str  # "new", "resume" or "overwrite"
    manifest: RunManifest
    replaced: list[str] = field(default_factory=list)  # entries of the old run that --overwrite removes
    main: bool = True  # rank 0 (the only process that writes)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the lock while the body writes the run; see the module docstring for what happens on failure."""
        if not self.main:
            yield
            return
        created = not self.out.exists()
        lock = acquire(self.out, command=self.manifest.command)
        trash = self.out / f"{REPLACED_PREFIX}{os.getpid()}"
        moved: list[str] = []
        try:
            _remove_stale_replacements(self.out)
            if self.mode == "overwrite":
                trash.mkdir()
                for name in [*self.replaced, MANIFEST_FILE]:
                    if (self.out / name).exists() or (self.out / name).is_symlink():
                        os.replace(self.out / name, trash / name)
                        moved.append(name)
            if self.mode != "resume":
                write_manifest(self.out, self.manifest)
            try:
                yield
            except BaseException:
                if self.mode != "resume" and not any((self.out / name).exists() for name in ("best", "last")):
                    self._roll_back(trash, moved, created)
                raise
        finally:
            if trash.exists():
                shutil.rmtree(trash, ignore_errors=True)
            lock.release()
            if created and self.out.is_dir() and not any(self.out.iterdir()):
                self.out.rmdir()

    def _roll_back(self, trash: Path, moved: list[str], created: bool) -> None:
        """Remove what this run wrote before its first checkpoint, and put the replaced run back."""
        for name in [*self.manifest.written, MANIFEST_FILE]:
            _remove(self.out / name)
        for name in moved:
            os.replace(trash / name, self.out / name)


def plan_run(
    args: argparse.Namespace,
    *,
    command: str,
    inputs: Mapping[str, tuple[str | None, Sequence[str]]],
    writes: Sequence[str],
) -> RunPlan:
    """Check everything a training command will touch, before it touches anything; return its plan.

    ``inputs``: ``{option: (value, the built-in names it may take instead of a file)}`` (None values are skipped).
    """
    out = Path(args.out)
    resume, overwrite = bool(getattr(args, "resume", False)), bool(getattr(args, "overwrite", False))
    _check_out(out)
    if getattr(args, "tensorboard", False):
        _check_tensorboard(out / "tensorboard")
    records = {name: _checked_input(name, value, builtins) for name, (value, builtins) in inputs.items() if value}
    settings = _settings(args)
    manifest = RunManifest(
        format="attnkit.run", format_version=1, command=command, settings=settings, inputs=records,
        written=list(dict.fromkeys(writes)),
    )  # fmt: skip
    main = os.environ.get("RANK", "0") == "0"
    if main and out.is_dir():
        check_unlocked(out)
    existing = [name for name in RUN_MARKERS if (out / name).exists()]
    if resume:
        _check_resume(out, manifest)
        return RunPlan(out, "resume", manifest, main=main)
    if existing and not overwrite:
        raise ValueError(
            f"--out {out} already holds a run ({', '.join(existing)}): add --resume to continue it or --overwrite "
            "to replace it"
        )
    if not overwrite or not out.is_dir():
        return RunPlan(out, "new", manifest, main=main)
    previous = read_manifest(out)
    names = previous.written if previous is not None else list(LEGACY_RUN_ENTRIES)
    replaced = [name for name in dict.fromkeys([*names, *manifest.written]) if (out / name).exists()]
    for name in replaced:
        _check_removable(out / name)
    return RunPlan(out, "overwrite", manifest, replaced, main=main)


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: exists and is not a directory")
    blocking = next((parent for parent in out.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise ValueError(f"--out {out}: {blocking} is a file, not a directory")
    if all((out / name).is_file() for name in _CHECKPOINT_FILES):
        raise ValueError(
            f"--out {out}: is a checkpoint directory (it holds {' and '.join(_CHECKPOINT_FILES)}), not a run "
            "directory; give the run's own directory"
        )
    existing = out if out.exists() else next(parent for parent in out.parents if parent.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: no permission to write in {existing}")


def _check_tensorboard(directory: Path) -> None:
    import importlib.util

    if directory.exists() and not directory.is_dir():
        raise ValueError(f"--tensorboard: {directory} exists and is not a directory")
    if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):
        raise ValueError(f"--tensorboard: no permission to write in {directory}")
    if importlib.util.find_spec("tensorboard") is None:
        raise ValueError("--tensorboard needs the tensorboard package: pip install 'attnkit[tensorboard]'")


def _checked_input(name: str, value: str, builtins: Sequence[str]) -> InputRecord:
    """``value`` of input option ``--NAME`` checked (a built-in name, or a readable file) and recorded."""
    if value in builtins:
        return input_record(value, builtin=True)
    option = "--" + name.replace("_", "-")
    path = Path(value).expanduser()
    if not path.exists():
        also = f"neither a built-in one ({', '.join(builtins)}) nor a file" if builtins else "no such file"
        raise ValueError(f"{option} {value}: {also}")
    if not path.is_file():
        raise ValueError(f"{option} {value}: is a directory, not a file")
    if not os.access(path, os.R_OK):
        raise ValueError(f"{option} {value}: no permission to read it")
    return input_record(value, builtin=False)


def _settings(args: argparse.Namespace) -> dict:
    """The JSON-ready arguments of the command (what a resumed run is compared on)."""
    plain = (str, int, float, bool, type(None))
    settings = {}
    for name, value in sorted(vars(args).items()):
        if name in DISPATCH:
            continue
        if isinstance(value, plain) or (isinstance(value, list) and all(isinstance(v, plain) for v in value)):
            settings[name] = value
    return settings


def _check_resume(out: Path, manifest: RunManifest) -> None:
    last = out / "last"
    if not last.is_dir():
        hint = "drop --resume to start a new run" if not any(
            (out / name).exists() for name in (*RUN_MARKERS, MANIFEST_FILE)
        ) else "--overwrite replaces what is there"  # fmt: skip
        raise ValueError(f"--resume: {last} does not exist, so there is nothing to resume ({hint})")
    saved = read_manifest(out)
    if saved is None:  # a run from before manifests: fit compares the settings its checkpoint records
        return
    may_change = (*MAY_CHANGE, *DISPATCH)
    found = differences(
        saved, manifest.command, manifest.settings, manifest.inputs, may_change=may_change, added_later=ADDED_LATER
    )
    if found:
        raise ValueError(
            f"--resume: {out} was started differently ({'; '.join(found)}): resume with what it started with, or "
            "start a new run"
        )


def _check_removable(path: Path) -> None:
    """Refuse an entry ``--overwrite`` could not delete completely (a directory inside it without write access)."""
    directories = [path] if path.is_dir() and not path.is_symlink() else []
    if directories:
        directories += [Path(root) / name for root, names, _ in os.walk(path) for name in names]
    for directory in directories:
        if not directory.is_symlink() and not os.access(directory, os.W_OK | os.X_OK):
            raise ValueError(f"--overwrite: cannot delete what is in {directory} (no write permission)")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _remove_stale_replacements(out: Path) -> None:
    """Delete what ``--overwrite`` runs that were killed moved aside (their process is gone)."""
    for stale in out.glob(f"{REPLACED_PREFIX}*"):
        pid = stale.name[len(REPLACED_PREFIX) :]
        if pid.isdigit() and not pid_is_running(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
