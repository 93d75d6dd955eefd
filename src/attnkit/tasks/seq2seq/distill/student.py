"""What a distilled student trains on: sequence-level knowledge distillation (Kim & Rush 2016) — the teachers'
best beam output for every training source replaces (or, with ``gold``, joins) the gold targets — plus, when asked,
sources with no gold that only the teachers label (Sun et al. 2019) (layer 5).

    distillation = Distillation(teachers=("g2p", "runs/b"), beam_size=5, unlabelled="builtin")
    data, record = distilled_data(data, source_tok, target_tok, distillation)      # record -> metrics.json

The validation and test splits keep their gold targets: the student is chosen and scored as any model is.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.seq2seq import UNK_ID, Seq2SeqData, Tokenizer
from attnkit.tasks.seq2seq.distill.options import DEFAULT_BEAM
from attnkit.tasks.seq2seq.distill.teachers import (
    Teachers,
    check_vocabularies,
    load_teachers,
    teacher_cache_root,
    teacher_outputs,
)
from attnkit.tasks.seq2seq.distill.unlabelled import unlabelled_sources

__all__ = ["Distillation", "distillation_from_args", "distilled_data", "provenance", "summary"]


@dataclass(frozen=True)
class Distillation:
    """How a student is distilled (``attnkit train seq2seq --distill-from A B ...``).

    ``token_weight`` adds token-level distillation (the teachers' distributions in the loss; 0: sequence-level
    only). ``held_out``: sources never added as unlabelled besides those of the data's splits (the whole data set's,
    when the run trains on a ``--limit`` subset of it).
    """

    teachers: tuple[str, ...]
    beam_size: int = 5
    length_penalty: float = 1.0
    gold: bool = False
    token_weight: float = 0.0
    unlabelled: str | None = None
    max_unlabelled: int | None = None
    seed: int = 0
    held_out: frozenset[str] = frozenset()
    device: str = "auto"
    precision: str = "fp32"
    batch_size: int = 256
    cache_root: Path | None = None

    def load(self) -> Teachers:
        """The teachers, loaded (:func:`~attnkit.tasks.seq2seq.distill.teachers.load_teachers`)."""
        return load_teachers(self.teachers, device=self.device, precision=self.precision)


def distilled_data(
    data: Seq2SeqData,
    source_tokenizer: Tokenizer,
    target_tokenizer: Tokenizer,
    distillation: Distillation,
    *,
    teachers: Teachers | None = None,
    report: Callable[[str], None] = print,
    progress: bool = True,
) -> tuple[Seq2SeqData, dict]:
    """``data`` with its training split replaced by the teachers' outputs (see the module docstring), and the
    record of how, for ``metrics.json``. ``report`` gets one line of summary."""
    teachers = teachers if teachers is not None else distillation.load()
    check_vocabularies(teachers, source_tokenizer, target_tokenizer)
    labelled = list(dict.fromkeys(source for source, _ in data.train))
    unlabelled, record = [], None
    if distillation.unlabelled is not None:
        exclude = {source for source, _ in (*data.train, *data.valid, *data.test)} | distillation.held_out
        sample = {"limit": distillation.max_unlabelled, "seed": distillation.seed}
        unlabelled, record = unlabelled_sources(
            distillation.unlabelled, exclude=exclude, known=lambda s: UNK_ID not in source_tokenizer.encode(s), **sample
        )
    decoding = {name: getattr(distillation, name) for name in ("beam_size", "length_penalty", "batch_size")}
    cache_root, report_progress = distillation.cache_root or teacher_cache_root(), _progress() if progress else None
    labels = teacher_outputs(
        teachers, labelled + unlabelled, cache_root=cache_root, progress=report_progress, **decoding
    )
    taught = [(source, labels.outputs[source]) for source in labelled + unlabelled if labels.outputs[source]]
    train = list(dict.fromkeys([*data.train, *taught])) if distillation.gold else taught
    distilled = {
        **teachers.record(),
        **labels.settings,
        "gold": distillation.gold,
        "token_weight": distillation.token_weight,
        "labelled_sources": len(labelled),
        "unlabelled": record,
        "empty_outputs": len(labelled) + len(unlabelled) - len(taught),
        "training_pairs": len(train),
        "cache": str(labels.directory),
    }
    report(summary(distilled, decoded=labels.decoded, damaged=labels.damaged))
    return dataclasses.replace(data, train=train), distilled


def _progress() -> Callable[[int, int], None]:
    """``progress(done, total)``: one line per decoded chunk on stderr, with the time left at the rate so far."""
    started = time.monotonic()

    def progress(done: int, total: int) -> None:
        seconds = time.monotonic() - started
        left = seconds / done * (total - done)
        line = f"teachers: decoded {done:,} of {total:,} sources in {seconds / 60:.1f} min ({left / 60:.1f} min left)"
        print(line, file=sys.stderr, flush=True)

    return progress


def provenance(record: dict) -> dict:
    """What the student's ``config.json`` keeps of :func:`distilled_data`'s record (``distillation``): no path, so
    a run resumed with another ``$ATTNKIT_CACHE`` or from another directory is the same run."""
    unlabelled = record.get("unlabelled") or None
    keys = ("teachers", "sha256", "beam_size", "length_penalty", "gold", "token_weight", "labelled_sources")
    kept = None if unlabelled is None else {"from": unlabelled["from"], "added": unlabelled["added"]}
    return {**{key: record[key] for key in keys}, "unlabelled": kept}


def summary(record: dict, *, decoded: int | None = None, damaged: int = 0) -> str:
    """One line saying how the student's training pairs were made (from :func:`distilled_data`'s record)."""
    teachers = record["teachers"]
    who = teachers[0] if len(teachers) == 1 else f"an ensemble of {len(teachers)} ({', '.join(teachers)})"
    decoding = "greedy" if record["beam_size"] == 1 else f"beam {record['beam_size']}"
    line = f"distilled from {who}, {decoding}: {record['labelled_sources']:,} training sources"
    unlabelled = record.get("unlabelled")
    if unlabelled:
        line += f" + {unlabelled['added']:,} unlabelled ({unlabelled['from']}, of {unlabelled['candidates']:,})"
    line += f" -> {record['training_pairs']:,} training pairs ({'with' if record['gold'] else 'without'} the gold)"
    if record.get("token_weight"):
        line += f", their distributions weighted {record['token_weight']:g} in the loss"
    if decoded is not None:
        cached = record["labelled_sources"] + (unlabelled["added"] if unlabelled else 0) - decoded
        line += f"; the teachers' outputs: {decoded:,} decoded now, {cached:,} read from {record['cache']}"
    if damaged:
        line += f" ({damaged} damaged cache file{'s' if damaged > 1 else ''} decoded again)"
    return line


def distillation_from_args(args: argparse.Namespace, *, precision: str = "fp32") -> Distillation | None:
    """The :class:`Distillation` ``attnkit train seq2seq``'s options describe, or None without ``--distill-from``."""
    if args.distill_from is None:
        return None
    return Distillation(
        teachers=tuple(args.distill_from),
        beam_size=args.distill_beam or DEFAULT_BEAM,
        gold=args.distill_gold,
        token_weight=args.distill_token_weight or 0.0,
        unlabelled=args.distill_unlabelled,
        max_unlabelled=args.distill_max_unlabelled,
        seed=args.seed,
        device=args.device,
        precision=precision,
    )
