"""The markdown of the deployment table (``docs/results.md``), from the sections :mod:`attnkit.experiments.deploy`
recorded in ``docs/results/deploy.json``, followed by the hand-written ``docs/results/deploy_notes.md``."""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.results_schema import read_results
from attnkit.tasks.seq2seq.scoring import scoring_named

__all__ = ["render_deploy"]

TITLE = "## Deployment: attnkit's decoder vs CTranslate2 float32 and int8 exports"
COMMAND = "attnkit experiment deploy --data cmudict --checkpoint RUN --threads 1"
LABELS = {
    "native": "attnkit (cached decoding, PyTorch eager)",
    "native int8": "attnkit, `--quantize int8`",
    "ctranslate2 float32": "CTranslate2, float32 export",
    "ctranslate2 int8": "CTranslate2, int8 export",
}


def render_deploy(results: Path) -> str:
    """The deployment section: one table per dataset recorded (or a line saying how to run it), then the notes."""
    summary = read_results(results, "deploy")
    lines = [TITLE, ""]
    if not summary:
        lines.append(f"_Not run yet: `{COMMAND}`._")
    for data, section in (summary or {}).items():
        lines += [*_table(data, section), ""]
    notes = results / "deploy_notes.md"
    if notes.exists():
        lines += ["" if lines[-1] else None, notes.read_text().rstrip()]
    return "\n".join(line for line in lines if line is not None).rstrip() + "\n"


SHARED_PROCESS = (
    "Decode times withdrawn: this section was timed with every decoder in one process, where torch's and "
    "CTranslate2's thread pools slow each other (issue #24); its scores stand. Re-run the command above, which now "
    "times each decoder in its own fresh process, to restore them."
)


def _heading(data: str, section: dict) -> tuple[str, tuple[str, str], tuple[str, str]]:
    """A section's title line, the labels of its two metrics and their keys in a row."""
    scoring = scoring_named(section["metrics"])
    first, second = scoring.labels
    title = f"### {data}: {section['data']} ({section['count']:,} sources, {section['decoding']})"
    return title, (first, second), scoring.headline


def _table(data: str, section: dict) -> list[str]:
    if "timing" not in section:  # recorded before issue #24: every decoder timed in one process
        return _scores_only(data, section)
    title, (first, second), keys = _heading(data, section)
    lines = [
        title,
        "",
        f"`{section['command']}` — {section['threads']} thread(s) per decoder, batches of {section['batch_size']} "
        f"sources sorted by length; {section['timing']} ({section['date']}; "
        f"torch {section['versions']['torch']}, CTranslate2 {section['versions']['ctranslate2']}). Throughput: "
        "fastest rounds.",
        "",
        f"| decoder | test {first} | test {second} | decode seconds, min / median | throughput vs attnkit "
        "| output identical to attnkit's |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in section["rows"].items():
        lines.append(
            f"| {LABELS.get(name, name)} | {row[keys[0]]:.2f} | {row[keys[1]]:.2f} "
            f"| {row['seconds_min']:.1f} / {row['seconds_median']:.1f} | {row['throughput_vs_native']:.2f}× "
            f"| {row['same_output_as_native']:.2f}% |"
        )
    return lines


def _scores_only(data: str, section: dict) -> list[str]:
    title, (first, second), keys = _heading(data, section)
    lines = [
        title,
        "",
        f"`{section['command']}` ({section['date']}; torch {section['versions']['torch']}, CTranslate2 "
        f"{section['versions']['ctranslate2']}). {SHARED_PROCESS}",
        "",
        f"| decoder | test {first} | test {second} | output identical to attnkit's |",
        "|---|---|---|---|",
    ]
    for name, row in section["rows"].items():
        lines.append(
            f"| {LABELS.get(name, name)} | {row[keys[0]]:.2f} | {row[keys[1]]:.2f} | {row['same_output_as_native']:.2f}% |"
        )
    return lines
