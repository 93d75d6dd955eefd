"""Validation curves of the sequence-to-sequence tables: the selection metric against training minutes.

Minutes are summed over a run's epochs in ``metrics.csv``, so a resumed run's curve continues where it stopped. A
table's classical peer is drawn as a dashed line at its test score.
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["plot_validation_curves", "validation_curve"]


def validation_curve(run_dir: Path, metric: str) -> list[dict[str, float]] | None:
    """``[{"epoch", "minutes", "value"}]`` of ``run_dir/metrics.csv`` (``value`` = column ``valid_<metric>``), or
    None when the run has no such file or column. Minutes are cumulative training-and-validation time per epoch."""
    path = Path(run_dir) / "metrics.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    column = f"valid_{metric}"
    if not rows or column not in rows[0] or "seconds" not in rows[0]:
        return None
    curve, seconds = [], 0.0
    for row in rows:
        seconds += float(row["seconds"])
        if row[column] not in ("", None):
            curve.append({"epoch": int(row["epoch"]), "minutes": round(seconds / 60, 2), "value": float(row[column])})
    return curve or None


def plot_validation_curves(summary: dict, target: Path, *, metric: str, title: str) -> bool:
    """Draw each run's ``"curve"`` in ``summary["runs"]`` into ``target`` (PNG; matplotlib's Agg canvas, no display);
    False, writing nothing, when no run has a curve."""
    runs = {run: row["curve"] for run, row in summary.get("runs", {}).items() if row.get("curve")}
    if not runs:
        return False
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8.4, 4.2))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for run, curve in runs.items():
        axes.plot([p["minutes"] for p in curve], [p["value"] for p in curve], marker=".", label=run)
    peer = summary.get("peer")
    if peer and metric in peer:
        axes.axhline(peer[metric], color="black", linestyle="--", linewidth=1.0, label=f"{peer['system']} (test)")
    axes.set_xlabel("training minutes (wall clock, validation included)")
    axes.set_ylabel(f"validation {metric.upper()}" + (" %" if metric in ("wer", "per") else ""))
    figure.suptitle(title)  # over the whole figure: the legend beside the axes leaves them too narrow for it
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small")
    figure.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=100)
    return True
