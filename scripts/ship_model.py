"""Ship a finished run as a named model inside attnkit: ``python -m scripts.ship_model RUN NAME --data D
--metric M --command "attnkit train ..."``, run
from the repository root (a maintainer's tool: nothing of attnkit imports it).

1. The run's ``best/`` (or the checkpoint directory given) is copied as it is — weights, ``config.json``, tokenizer
   files — into a staging folder beside the shelf; ``--float16`` stores the floating-point weights in float16.
2. The test figure is measured **from the staged files**, by ``attnkit evaluate --checkpoint STAGED --data D --json
   --threads 1 --device cpu`` in a process of its own: the same command a user re-checks the card with.
3. A model of that name already shipped is replaced only when the new figure is better (``--replace`` forces it):
   git keeps every version, so replacements should be rare.
4. The checkpoint must fit :data:`~attnkit.pretrained.MAX_MODEL_BYTES`, and the shelf
   :data:`~attnkit.pretrained.MAX_TOTAL_BYTES`, else nothing is changed.
5. A classifier's faithfulness figures are measured from the staged files too (:mod:`scripts.card_faithfulness`:
   attention against integrated gradients and a random floor on a fixed sample of test documents, and the
   uniform-attention gap of its row in ``docs/results/faithfulness.json``).
6. ``card.json`` and ``MODEL_CARD.md`` are written, the folder moved into place, and the figure recorded in
   ``docs/results/shipped.json`` (``--results``), which ``docs/results.md`` and the figure tests read.

``python -m scripts.ship_model --refresh-faithfulness NAME`` measures and writes the faithfulness figures of a
classifier already shipped (its weights untouched).

Training minutes: the run's ``metrics.json`` (``train_seconds``, resumed parts included) plus those of the model it
started from (``init_from.training_minutes``, written by ``attnkit train ... --init-from``); ``--minutes`` gives the
total instead, for a run whose metrics.json does not say (a copied checkpoint).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.pretrained import CARD_FILE, MAX_MODEL_BYTES, MAX_TOTAL_BYTES, MODEL_CARD_FILE, SHELF, folder_bytes
from scripts.card_faithfulness import measure_faithfulness, published_faithfulness, refresh_faithfulness
from scripts.model_cards import improves, render_model_card

__all__ = ["ShipRequest", "main", "measure", "ship"]

DEFAULT_LIMITS = (
    "One seed, one training run on a 2-core CPU machine; the figure is for the split named above only. "
    "No guarantee outside that data's domain."
)


@dataclass
class ShipRequest:
    """The options of one shipment (the command line's, see :func:`main`)."""

    source: str
    name: str
    data: str
    metric: str
    command: str
    float16: bool = False
    minutes: float | None = None
    minutes_note: str | None = None
    beam: int = 1
    replace: bool = False
    limits: str = DEFAULT_LIMITS
    data_note: str | None = None
    results: str | None = None
    shelf: str | None = None


def ship(request: ShipRequest) -> dict[str, Any]:
    """Ship ``request.source`` as ``request.name`` (the module docstring); returns the card written.

    Raises:
        ValueError: a bad name, no such run, unknown training minutes, a metric ``evaluate --json`` does not
            report, a figure that does not improve on the shipped one, or a model over the caps. Nothing is
            changed on the shelf then.
    """
    from attnkit.checkpointing import read_config, read_metadata, resolve_checkpoint

    shelf = Path(request.shelf) if request.shelf else SHELF
    name = request.name
    if not name.replace("-", "").replace("_", "").isalnum() or not name[0].isalpha():
        raise ValueError(f"NAME {name!r}: use letters, digits, '-' and '_', starting with a letter")
    checkpoint = resolve_checkpoint(request.source)
    minutes, minutes_note = _training_minutes(checkpoint, request.minutes)
    minutes_note = request.minutes_note or minutes_note
    target = shelf / name
    staging = shelf / f".{name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _copy_checkpoint(checkpoint, staging, read_metadata(checkpoint).get("files", []), float16=request.float16)
        size = folder_bytes(staging)
        if size > MAX_MODEL_BYTES:
            hint = "" if request.float16 else " (try --float16)"
            raise ValueError(f"{name}: {size:,} bytes, over the cap of {MAX_MODEL_BYTES:,} per model{hint}")
        others = sum(folder_bytes(shelf / other) for other in _other_models(shelf, name))
        if others + size > MAX_TOTAL_BYTES:
            raise ValueError(
                f"{name}: the shelf would hold {others + size:,} bytes, over the cap of {MAX_TOTAL_BYTES:,} in all"
            )
        value = measure(staging, data=request.data, metric=request.metric, beam=request.beam)
        if not request.replace:
            _check_improves(target / CARD_FILE, request, value)
        config, metadata = read_config(staging), read_metadata(staging)
        card = _card(request, value=value, size=size, minutes=minutes, config=config, metadata=metadata)
        card["minutes_note"] = minutes_note
        card["parameters"] = _parameter_count(staging)
        if card["kind"] == "classifier":
            gaps = Path(request.results).parent / "faithfulness.json" if request.results else None
            card["faithfulness"] = measure_faithfulness(staging, name=name, data=request.data, results=gaps)
        (staging / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
        (staging / MODEL_CARD_FILE).write_text(render_model_card(card, config=config, metadata=metadata))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if request.results:
        record_figure(Path(request.results), card)
    return card


def measure(checkpoint: Path, *, data: str, metric: str, beam: int = 1) -> float:
    """``metric`` of ``attnkit evaluate --checkpoint CHECKPOINT --data DATA --json`` (one thread, the CPU), run in
    a process of its own.

    Raises:
        ValueError: the evaluation failed (its error line is quoted) or does not report ``metric``.
    """
    command = [sys.executable, "-m", "attnkit.cli", *evaluate_arguments(str(checkpoint), data, beam)]
    command += ["--threads", "1", "--device", "cpu", "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ValueError(f"evaluating {checkpoint} failed: {last}")
    try:
        result = json.loads((done.stdout.strip().splitlines() or [""])[-1])
    except ValueError:
        result = None
    if not isinstance(result, dict):
        raise ValueError(f"evaluating {checkpoint} printed no JSON object on its last line")
    if metric not in result or not isinstance(result[metric], (int, float)):
        reported = ", ".join(key for key, value in result.items() if isinstance(value, (int, float)))
        raise ValueError(f"--metric {metric!r}: `attnkit evaluate --json` reports {reported}")
    return result[metric]


def evaluate_arguments(checkpoint: str, data: str, beam: int = 1) -> list[str]:
    """The ``attnkit evaluate`` arguments that measure a card's figure."""
    return ["evaluate", "--checkpoint", checkpoint, "--data", data, "--json", *(["--beam", str(beam)] * (beam > 1))]


def record_figure(path: Path, card: dict[str, Any]) -> None:
    """Record the card's published figure in ``path`` (``docs/results/shipped.json``: name -> figure)."""
    table = json.loads(path.read_text()) if path.exists() else {}
    keys = ("kind", "data", "metric", "value", "split", "measured", "evaluate", "training_minutes", "command")
    table[card["name"]] = {key: card[key] for key in keys}
    if "faithfulness" in card:
        table[card["name"]]["faithfulness"] = published_faithfulness(card["faithfulness"])
    path.write_text(json.dumps(dict(sorted(table.items())), indent=2) + "\n")


def _card(
    request: ShipRequest, *, value: float, size: int, minutes: float, config: dict, metadata: dict
) -> dict[str, Any]:
    kind = config.get("kind", "?")
    evaluate = "attnkit " + " ".join(evaluate_arguments(request.name, request.data, request.beam))
    note = request.data_note or (
        f"trained on the built-in `{request.data}` data's training split (its validation split chose the epoch); "
        f"the figure is on its fixed test split (`--data {request.data}`)."
    )
    return {
        "name": request.name,
        "kind": kind,
        "data": request.data,
        "metric": request.metric,
        "value": value,
        "split": "test",
        "measured": datetime.date.today().isoformat(),
        "size_bytes": size,
        "training_minutes": round(minutes, 1),
        "command": request.command,
        "evaluate": evaluate,
        "float16": request.float16,
        "data_note": note,
        "limits": request.limits,
        "attnkit": metadata.get("version"),
    }


def _check_improves(card_path: Path, request: ShipRequest, value: float) -> None:
    """Refuse (ValueError) unless the model shipped at ``card_path``, if any, has a figure of the same metric on
    the same data, and ``value`` improves on it: figures of different metrics or data are never compared."""
    if not card_path.is_file():
        return
    old = _read_json_object(card_path, "--replace to replace it")
    old_metric, old_data = old.get("metric"), old.get("data")
    old_value = _number(old, "value", card_path, "--replace to replace it")
    if (old_metric, old_data) != (request.metric, request.data):
        raise ValueError(
            f"{request.name}: shipped with {old_metric} {old_value} on {old_data}, which cannot be compared with "
            f"--metric {request.metric} on --data {request.data} (ship it with --metric {old_metric} --data "
            f"{old_data}, or --replace to replace it anyway)"
        )
    if not improves(request.metric, value, old_value):
        raise ValueError(
            f"{request.name}: already shipped with {old_metric} {old_value}; the new {request.metric} {value} "
            "does not improve on it (--replace to replace it anyway)"
        )


def _read_json_object(path: Path, advice: str) -> dict[str, Any]:
    """The JSON object in ``path``, or ValueError naming it (unreadable, not JSON, not an object)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not readable JSON ({error}); {advice}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a JSON object; {advice}")
    return value


def _number(mapping: dict[str, Any], key: str, path: Path, advice: str, *, required: bool = True) -> float:
    """``mapping[key]`` as a finite number (0.0 when absent and not ``required``), or ValueError naming the field."""
    value = mapping.get(key)
    if value is None and not required:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        raise ValueError(
            f"{path}: field {key!r} is {'missing' if value is None else repr(value)}, not a number; {advice}"
        )
    return float(value)


def _training_minutes(checkpoint: Path, given: float | None) -> tuple[float, str]:
    """The run's training minutes and those of the model it was initialised from, or ``given``."""
    if given is not None:
        return given, "as given when shipped"
    metrics_path = checkpoint.parent / "metrics.json"
    if not metrics_path.is_file():
        raise ValueError(f"{checkpoint}: no {metrics_path.name} beside it to read the training minutes; give --minutes")
    metrics = _read_json_object(metrics_path, "give --minutes")
    own = _number(metrics, "train_seconds", metrics_path, "give --minutes") / 60
    init = metrics.get("init_from") or {}
    if not isinstance(init, dict):
        raise ValueError(f"{metrics_path}: field 'init_from' is {init!r}, not an object; give --minutes")
    earlier = _number(init, "training_minutes", metrics_path, "give --minutes", required=False)
    if earlier:
        return own + earlier, f"{own:.1f} in this run + {earlier:.1f} of {init.get('checkpoint')} it started from"
    return own, ""


def _copy_checkpoint(source: Path, staging: Path, files: list[str], *, float16: bool) -> None:
    from attnkit.checkpointing import CONFIG_FILE, WEIGHTS_FILE

    staging.mkdir(parents=True)
    for name in [CONFIG_FILE, *files]:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / name, staging / name)
    if float16:
        _save_float16(source / WEIGHTS_FILE, staging / WEIGHTS_FILE)
    else:
        shutil.copyfile(source / WEIGHTS_FILE, staging / WEIGHTS_FILE)


def _save_float16(source: Path, target: Path) -> None:
    """Copy a safetensors file with its float32 tensors stored as float16 (header metadata kept)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(source), framework="pt") as handle:
        metadata = handle.metadata()
        tensors = {key: handle.get_tensor(key) for key in handle.keys()}  # noqa: SIM118
    tensors = {key: value.half() if value.dtype == torch.float32 else value for key, value in tensors.items()}
    save_file(tensors, str(target), metadata=metadata)


def _parameter_count(checkpoint: Path) -> int:
    from safetensors import safe_open

    from attnkit.checkpointing import WEIGHTS_FILE

    with safe_open(str(checkpoint / WEIGHTS_FILE), framework="pt") as handle:
        count = 0
        for key in handle.keys():  # noqa: SIM118
            size = 1
            for dim in handle.get_slice(key).get_shape():
                size *= dim
            count += size
    return count


def _other_models(shelf: Path, name: str) -> list[str]:
    return [
        path.name for path in shelf.iterdir() if path.is_dir() and (path / CARD_FILE).is_file() and path.name != name
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m scripts.ship_model`` (or ``--refresh-faithfulness NAME``); errors are one ``ship: error:`` line
    (exit 2)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--refresh-faithfulness"]:
        return refresh_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m scripts.ship_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="a finished run directory (meaning its best/) or a checkpoint directory")
    parser.add_argument("name", help="the shipped model's name (letters, digits, '-', '_')")
    parser.add_argument("--data", required=True, help="the data the figure is measured on, as --data takes it")
    parser.add_argument("--metric", required=True, help="the figure, as `attnkit evaluate --json` names it")
    parser.add_argument("--command", required=True, help="the command that trained it (quoted, one string)")
    parser.add_argument("--float16", action="store_true", help="store the floating-point weights in float16")
    parser.add_argument("--minutes", type=float, default=None, help="total training minutes (default: metrics.json)")
    parser.add_argument("--minutes-note", default=None, help="where --minutes comes from (the card says it)")
    parser.add_argument("--beam", type=int, default=1, help="seq2seq: measure with beam search of this width")
    parser.add_argument("--replace", action="store_true", help="replace a shipped model even if not better")
    parser.add_argument("--limits", default=DEFAULT_LIMITS, help="the card's known limits")
    parser.add_argument("--data-note", default=None, help="the card's data and split sentence")
    parser.add_argument("--results", default="docs/results/shipped.json", help="where the figure is recorded")
    parser.add_argument("--shelf", default=None, help=argparse.SUPPRESS)
    request = ShipRequest(**vars(parser.parse_args(argv)))
    if request.results and not Path(request.results).parent.is_dir():
        request.results = None
    try:
        card = ship(request)
    except (ValueError, OSError) as error:
        print(f"ship: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    print(f"shipped {card['name']}: {card['metric']} {card['value']} on {card['data']} ({card['size_bytes']:,} bytes)")
    return 0


def refresh_main(argv: list[str]) -> int:
    """``python -m scripts.ship_model --refresh-faithfulness NAME [--results PATH]``."""
    parser = argparse.ArgumentParser(prog="python -m scripts.ship_model --refresh-faithfulness")
    parser.add_argument("name", help="a shipped classifier's name")
    parser.add_argument("--results", default="docs/results/shipped.json", help="where the figures are recorded")
    parser.add_argument("--shelf", default=None, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    results = Path(options.results) if Path(options.results).parent.is_dir() else None
    try:
        card = refresh_faithfulness(options.name, shelf=Path(options.shelf) if options.shelf else None, results=results)
    except (ValueError, OSError) as error:
        print(f"ship: error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    block = card["faithfulness"]
    aopc = {name: figures["aopc_comprehensiveness"] for name, figures in block["methods"].items()}
    print(f"{card['name']}: AOPC comprehensiveness {aopc} on {block['documents_measured']} test documents")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
