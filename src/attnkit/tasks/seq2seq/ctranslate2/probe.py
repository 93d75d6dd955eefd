"""Whether a directory is a CTranslate2 export, which task wrote it, and why it is no checkpoint (layer 5; no torch,
nothing of attnkit imported: the task registry reads it through ``TaskSpec.exports``)."""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.tasks.spec import ExportFormat

__all__ = ["EXPORTS", "MANIFEST_FILE", "export_kind", "export_message", "is_export"]

MANIFEST_FILE = "attnkit_export.json"  # what `attnkit export` writes beside CTranslate2's files


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is a directory ``attnkit export`` wrote (a CTranslate2 model, not a checkpoint)."""
    return Path(path).is_dir() and (Path(path) / MANIFEST_FILE).is_file()


def export_kind(path: str | Path) -> str | None:
    """The kind of the task that exported ``path`` (its manifest names it; exports written before manifests named
    their kind were all ``seq2seq`` ones), or None: ``path`` is no export."""
    if not is_export(path):
        return None
    manifest = Path(path) / MANIFEST_FILE
    try:
        kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind", "seq2seq")
    except (OSError, ValueError, AttributeError) as error:
        raise ValueError(f"{manifest}: unreadable export manifest ({error})") from None
    if not isinstance(kind, str):
        raise ValueError(f"{manifest}: the field 'kind' must be a string naming the export's task, got {kind!r}")
    return kind


def export_message(path: str | Path) -> str:
    """One line saying that ``path`` is an export, what reads it and what it cannot do (naming its checkpoint)."""
    try:
        source = json.loads((Path(path) / MANIFEST_FILE).read_text(encoding="utf-8")).get("source")
    except (OSError, ValueError, AttributeError):
        source = None
    origin = f" ({source})" if isinstance(source, str) and source else ""
    return (
        f"{path}: a CTranslate2 export written by attnkit export, not a checkpoint: decode it with --backend "
        f"ctranslate2 (attnkit translate, attnkit evaluate) or attnkit.load() in Python; an export has no attention "
        f"weights, so explaining (and training, resuming, exporting again) needs the checkpoint it came from{origin}"
    )


EXPORTS = ExportFormat(kind_of=export_kind, refusal=export_message)
