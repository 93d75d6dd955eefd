"""The markdown of the deployment table (``docs/results.md``), from the sections :mod:`attnkit.experiments.deploy`
recorded in ``docs/results/deploy.json``, followed by the hand-written ``docs/results/deploy_notes.md``."""

from __future__ import annotations

from pathlib import Path

from attnkit.experiments.results_schema import read_results

__all__ = ["render_deploy"]

TITLE = "## Deployment: attnkit's decoder vs CTranslate2 float32 and int8 exports"
COMMAND = "attnkit experiment deploy --data cmudict --checkpoint RUN --threads 1"
LABELS = {
    "native": "attnkit (cached decoding, PyTorch eager)",
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


def _table(data: str, section: dict) -> list[str]:
    text = section["metrics"] == "text"
    first, second = ("BLEU", "chrF") if text else ("WER %", "PER %")
    keys = ("bleu", "chrf") if text else ("wer", "per")
    lines = [
        f"### {data}: {section['data']} ({section['count']:,} sources, {section['decoding']})",
        "",
        f"`{section['command']}` — {section['threads']} thread(s) per decoder, batches of {section['batch_size']} "
        f"sources sorted by length, {section['rounds']} rounds in rotating order ({section['date']}; "
        f"torch {section['versions']['torch']}, CTranslate2 {section['versions']['ctranslate2']}).",
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
