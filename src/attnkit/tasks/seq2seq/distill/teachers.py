"""The teachers of a distilled student: one checkpoint or an ensemble of them, loaded as ``attnkit evaluate
--checkpoint A B --beam 5`` loads them (:func:`~attnkit.tasks.seq2seq.inference.load_seq2seq_ensemble`), their
outputs decoded with beam search and kept in a :class:`~attnkit.tasks.seq2seq.distill.cache.TeacherCache`
(layer 5).

    teachers = load_teachers(["g2p", "runs/b"], device="cpu")
    check_vocabularies(teachers, source_tok, target_tok)          # the student's must be the teachers'
    labels = teacher_outputs(teachers, sources, beam_size=5, cache_root=teacher_cache_root())
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.data.seq2seq import Tokenizer
from attnkit.tasks.seq2seq.distill.cache import TeacherCache
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq, load_seq2seq_ensemble

__all__ = [
    "CHUNK_SOURCES",
    "TeacherLabels",
    "Teachers",
    "check_vocabularies",
    "decode_sources",
    "load_teachers",
    "resolve_teachers",
    "teacher_cache_root",
    "teacher_outputs",
]

CHUNK_SOURCES = 2048  # sources per cache file: what a killed run can lose
_FINGERPRINTED = ("config.json", "model.safetensors", "tokenizer.json", "source_tokenizer.json",
                  "target_tokenizer.json")  # fmt: skip


@dataclass(frozen=True)
class Teachers:
    """The loaded teachers (``loaded``: one model, or their ensemble), each as ``given`` and as resolved to a
    checkpoint, and the SHA-256 of each checkpoint's files (``fingerprint``, in member order)."""

    given: tuple[str, ...]
    checkpoints: tuple[Path, ...]
    loaded: LoadedSeq2Seq
    fingerprint: tuple[str, ...]

    def record(self) -> dict:
        """What the run's ``metrics.json`` keeps of them."""
        return {"teachers": list(self.given), "resolved": [str(c.resolve()) for c in self.checkpoints],
                "sha256": list(self.fingerprint)}  # fmt: skip


def resolve_teachers(given: Sequence[str]) -> tuple[Path, ...]:
    """The checkpoint each of ``given`` names, each checked to be a seq2seq one (reads configs only)."""
    from attnkit.checkpointing import CheckpointError, read_config_of_kind, resolve_checkpoint
    from attnkit.tasks.seq2seq.config import KIND

    checkpoints = []
    for name in given:
        try:
            checkpoint = resolve_checkpoint(name)
            read_config_of_kind(checkpoint, KIND)
        except CheckpointError as error:
            raise CheckpointError(f"--distill-from {name}: {error}") from None
        checkpoints.append(checkpoint)
    return tuple(checkpoints)


def load_teachers(given: Sequence[str], *, device: str = "auto", precision: str = "fp32") -> Teachers:
    """Resolve (:func:`resolve_teachers`) and load ``given`` as one model (an ensemble of several)."""
    from attnkit.checkpointing import CheckpointError

    checkpoints = resolve_teachers(given)
    try:
        loaded = load_seq2seq_ensemble(checkpoints, device=device, precision=precision)
    except CheckpointError as error:
        raise CheckpointError(f"--distill-from: {error}") from None
    return Teachers(tuple(given), checkpoints, loaded, tuple(_fingerprint(c) for c in checkpoints))


def _fingerprint(checkpoint: Path) -> str:
    """One SHA-256 over the checkpoint's config, weights and tokenisers (what decides its outputs)."""
    digest = hashlib.sha256()
    for name in _FINGERPRINTED:
        path = checkpoint / name
        if path.is_file():
            digest.update(f"{name}\0".encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def check_vocabularies(teachers: Teachers, source_tokenizer: Tokenizer, target_tokenizer: Tokenizer) -> None:
    """Refuse a student whose tokenisers are not the teachers': the student learns the teachers' outputs token by
    token, and the teachers read its sources."""
    loaded = teachers.loaded
    sides = (("source", loaded.source_tokenizer, source_tokenizer), ("target", loaded.target_tokenizer,
             target_tokenizer))  # fmt: skip
    for side, theirs, ours in sides:
        if theirs.to_dict() != ours.to_dict():
            raise ValueError(
                f"--distill-from {' '.join(teachers.given)}: the teachers' {side} vocabulary ({theirs.vocab_size} "
                f"tokens) is not the student's ({ours.vocab_size}): train the student on the data the teachers were "
                "trained on (same levels and vocabulary size), or --init-from one of them"
            )


def teacher_cache_root() -> Path:
    """``$ATTNKIT_CACHE/teachers`` (attnkit's cache directory, see :func:`attnkit.data.seq2seq.cache_dir`)."""
    from attnkit.data.seq2seq import cache_dir

    return cache_dir() / "teachers"


@dataclass(frozen=True)
class TeacherLabels:
    """The teachers' output for every source asked, how many were decoded now or read from the cache, and how many
    cache files were damaged (removed, their sources decoded again)."""

    outputs: dict[str, str]
    decoded: int
    cached: int
    damaged: int
    directory: Path
    settings: dict = field(default_factory=dict)


def decode_sources(loaded: LoadedSeq2Seq, sources: Sequence[str], *, beam_size: int, batch_size: int,
                   length_penalty: float) -> list[str]:  # fmt: skip
    """The best beam hypothesis of each source, as text (the one place the teachers decode)."""
    options = {"beam_size": beam_size, "batch_size": batch_size, "length_penalty": length_penalty}
    return [translation.text for translation in loaded.translate(list(sources), **options)]


def teacher_outputs(
    teachers: Teachers,
    sources: Sequence[str],
    *,
    beam_size: int = 5,
    length_penalty: float = 1.0,
    batch_size: int = 256,
    cache_root: str | Path,
    progress: Callable[[int, int], None] | None = None,
) -> TeacherLabels:
    """The teachers' best beam output for every distinct source of ``sources``: read from the cache, the rest decoded
    shortest first, each chunk of :data:`CHUNK_SOURCES` cached as soon as it is decoded."""
    decoding = {"beam_size": beam_size, "length_penalty": length_penalty}
    settings = {**decoding, "precision": teachers.loaded.precision}
    cache = TeacherCache(cache_root, {"sha256": list(teachers.fingerprint), **settings}, about=teachers.record())
    found = cache.read()
    wanted = list(dict.fromkeys(sources))
    missing = sorted((s for s in wanted if s not in found.outputs), key=lambda s: (len(s), s))
    outputs = dict(found.outputs)
    for start in range(0, len(missing), CHUNK_SOURCES):
        chunk = missing[start : start + CHUNK_SOURCES]
        decoded = decode_sources(teachers.loaded, chunk, batch_size=batch_size, **decoding)
        cache.write(chunk, decoded)
        outputs.update(zip(chunk, decoded, strict=True))
        if progress is not None:
            progress(start + len(chunk), len(missing))
    cached = len(wanted) - len(missing)
    return TeacherLabels(
        {s: outputs[s] for s in wanted}, len(missing), cached, found.damaged, cache.directory, settings
    )
