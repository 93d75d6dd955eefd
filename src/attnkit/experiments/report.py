"""Render ``docs/results.md`` from what the experiments recorded (``docs/results/*.json``) and the hand-written
fragments beside them (``docs/results/*.md``: the demo and vision sections, and each table's notes on what was
tried). ``attnkit experiment report`` re-renders it; every experiment does so when it finishes.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.common import ExperimentPaths, read_json
from attnkit.experiments.faithful_attention.table import render_faithful_attention
from attnkit.experiments.faithfulness.table import render_faithfulness
from attnkit.experiments.masking.table import render_masking
from attnkit.experiments.results_schema import read_results

__all__ = ["render_results"]

INTRO = """# Results

Every figure here comes from a command in this repository, run on the project's standard machine (2 CPU cores,
no GPU). This page is generated: `attnkit experiment report` rebuilds it from `docs/results/*.json` (written by
the `attnkit experiment ...` commands quoted below) and the hand-written notes in `docs/results/*.md`. Each
experiment reuses finished runs under `runs/experiments/` and resumes interrupted ones, so re-running its command
regenerates its table; delete the run directories to train from scratch.
"""

NOT_RUN = "_Not run yet: `{command}`._\n"


def render_results(paths: ExperimentPaths) -> Path:
    """Write ``paths.docs / "results.md"`` and return its path."""
    results = paths.results
    sections = [
        INTRO,
        _fragment(results / "demo.md"),
        _classification(read_results(results, "classification")),
        _fragment(results / "classification_notes.md"),
        render_masking(read_results(results, "masking")),
        _fragment(results / "masking_notes.md"),
        render_faithfulness(read_json(results / "faithfulness.json")),
        _fragment(results / "faithfulness_notes.md"),
        render_faithful_attention(read_json(results / "faithful_attention.json")),
        _fragment(results / "faithful_attention_notes.md"),
    ]
    from attnkit.experiments.deploy.table import render_deploy
    from attnkit.experiments.seq2seq.tables import render_sections

    sections += render_sections(results)
    sections.append(render_deploy(results))
    sections.append(_fragment(results / "vision.md"))
    from attnkit.experiments.shipped_table import render_shipped

    sections.append(render_shipped(results))
    target = paths.docs / "results.md"
    target.write_text("\n".join(section.rstrip() + "\n" for section in sections if section))
    return target


def _fragment(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _classification(table: dict | None) -> str:
    lines = ["## Document classification: 20ng, R8, R52 (Text GCN splits) and fine-foods", ""]
    if not table:
        return "\n".join(lines) + "\n" + NOT_RUN.format(command="attnkit experiment classification --seeds 3")
    lines += [
        "Test accuracy (%), mean ± standard deviation over seeds; the model is selected on a validation split carved",
        "from the training data. TF-IDF + LR is `attnkit.tasks.classify.baselines` fitted on the same training split.",
        "",
        "| data | attnkit model (seeds) | TF-IDF + LR | beats it | Text GCN | target | met | minutes / run | command |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for data, row in table.items():
        mean, std = row["test_accuracy_mean"], row["test_accuracy_std"]
        beats, published, met = _judged(row, mean)
        lines.append(
            f"| {data} | {mean:.2f} ± {std:.2f} ({len(row['runs'])}) | {row['baseline']['test_accuracy']:.2f} | {beats} "
            f"| {published} | ≥ {row['target']:.2f} | {met} | {row['minutes_mean']:.1f} | `{row['command']}` |"
        )
        if row.get("ensemble"):
            lines.append(_ensemble_row(data, row))
    if any(row.get("ensemble") for row in table.values()):
        lines += [
            "",
            "An *ensemble* row scores the seeds' models of the row above it as one (their class probabilities "
            "averaged); its minutes are all its members' training minutes together.",
        ]
    lines += ["", "One run of each row, as a training command:", ""]
    lines += [f"- {data}: `{row['run_command']}`" for data, row in table.items()]
    return "\n".join(lines) + "\n"


def _ensemble_row(data: str, row: dict) -> str:
    """The table row of a data set's seed ensemble (its cost: the members' training minutes summed)."""
    ensemble, accuracy = row["ensemble"], row["ensemble"]["test_accuracy"]
    beats, published, met = _judged(row, accuracy)
    return (
        f"| {data} | ensemble of the {ensemble['members']} seeds: {accuracy:.2f} | {row['baseline']['test_accuracy']:.2f} "
        f"| {beats} | {published} | ≥ {row['target']:.2f} | {met} | {ensemble['training_minutes']:.1f} in all "
        f"| `{ensemble['command']}` |"
    )


def _judged(row: dict, accuracy: float) -> tuple[str, str, str]:
    """Whether ``accuracy`` beats the row's TF-IDF baseline, Text GCN's published figure, whether it meets the target."""
    published = "–" if row["published_text_gcn"] is None else f"{row['published_text_gcn']:.2f}"
    beats = "yes" if accuracy > row["baseline"]["test_accuracy"] else "**no**"
    return beats, published, "yes" if accuracy >= row["target"] else "**no**"
