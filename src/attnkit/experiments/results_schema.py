"""What ``docs/results/*.json`` hold, as schemas (layer 6): ``attnkit experiment report`` reads each file through
:func:`read_results`, so a hand-edited or truncated file is one line naming the file and the field, not a
``KeyError`` half-way through rendering. The schemas name the fields the tables read; other keys are kept (the
experiments record more than the tables show)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from attnkit.checkpointing.config_io import JsonConfig, read_json_file

__all__ = ["RESULT_SCHEMAS", "read_results"]


class _Open(JsonConfig):
    open_keys: ClassVar[bool] = True
    kind_name: ClassVar[str] = "results"


@dataclass
class _Baseline(_Open):
    test_accuracy: float


@dataclass
class _ClassificationEnsemble(_Open):
    members: int
    test_accuracy: float
    training_minutes: float
    command: str


@dataclass
class _ClassificationRow(_Open):
    command: str
    run_command: str
    runs: list[dict[str, Any]]
    test_accuracy_mean: float
    test_accuracy_std: float
    minutes_mean: float
    baseline: _Baseline
    target: float
    published_text_gcn: float | None = None
    ensemble: _ClassificationEnsemble | None = None


@dataclass
class _MaskingStats(_Open):
    test_accuracy_mean: float
    test_accuracy_std: float


@dataclass
class _MaskingModel(_Open):
    run_command: str
    modes: dict[str, _MaskingStats]
    seeds: int | None = None


@dataclass
class _Masking(_Open):
    data: str
    command: str
    models: dict[str, _MaskingModel]
    seeds: int | None = None


@dataclass
class _Seq2SeqRun(_Open):
    command: str
    test: dict[str, float]
    best_valid: dict[str, float]
    epochs_run: int | str  # an ensemble's row: its members' epochs ("17 + 13")
    minutes: float
    beam: int | None = None
    test_beam: dict[str, float] | None = None
    bleu_by_length: list[dict[str, Any]] | None = None


@dataclass
class _Peer(_Open):
    version: str
    order: int
    wer: float
    per: float
    train_cpu_seconds: float
    command: str


@dataclass
class _Seq2Seq(_Open):
    command: str
    data: str
    runs: dict[str, _Seq2SeqRun]
    peer: _Peer | None = None
    curves_plot: str | None = None
    plot: str | None = None


@dataclass
class _DeployRow(_Open):
    seconds_min: float
    seconds_median: float
    throughput_vs_native: float
    same_output_as_native: float


@dataclass
class _DeploySection(_Open):
    command: str
    data: str
    count: int
    metrics: str
    decoding: str
    batch_size: int
    threads: int
    rounds: int
    date: str
    versions: dict[str, str]
    rows: dict[str, _DeployRow]


RESULT_SCHEMAS: dict[str, Any] = {
    "classification": dict[str, _ClassificationRow],
    "masking": _Masking,
    "g2p": _Seq2Seq,
    "bible": _Seq2Seq,
    "luong": _Seq2Seq,
    "deploy": dict[str, _DeploySection],
}


def read_results(results: Path, name: str) -> Any | None:
    """``results/NAME.json`` as plain JSON after checking it against its schema, or None when it does not exist."""
    path = results / f"{name}.json"
    if not path.exists():
        return None
    read_json_file(path, RESULT_SCHEMAS[name], label=f"{name} results")
    import json

    return json.loads(path.read_text(encoding="utf-8"))
