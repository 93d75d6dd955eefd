"""The faithfulness experiment's Transformer seq2seq row (layer 6): a dates Transformer (``--data dates --model
transformer``; the shipped ``dates-transformer`` once ``attnkit models`` lists it, or ``--checkpoint RUN``) on a
seeded sample of the held-back validation pairs.

For each pair, greedy-decoded, and each emitted character (``<eos>`` included), over the source characters:

* the erasure tests of :mod:`attnkit.explain.faithfulness` (deletion) for attention (the last decoder layer's
  cross-attention, heads averaged), rollout and flow through the encoder read out by that cross-attention
  (Abnar & Zuidema), gradient × input, integrated gradients, leave-one-out and random;
* Jain & Wallace's permutation test with every decoder layer's cross-attention shuffled among the source
  characters (each head and step its own shuffle; the encoder's self-attention left as it is).

Each pair's figures are the means over its emitted characters; the intervals are over the pairs.

Shape glossary:
    S  source characters   T  emitted characters
"""

from __future__ import annotations

from pathlib import Path

from attnkit.explain.faithfulness.methods import METHODS

__all__ = ["PAIRS", "SHIPPED", "TRANSFORMER_METHODS", "pair_record", "resolve_model", "run_dates_transformer"]

PAIRS = 100  # validation pairs sampled at most
SHIPPED = "dates-transformer"
TRANSFORMER_METHODS = METHODS  # every method: a Transformer has layers to roll out and a flow graph
FIGURES = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")


def pair_record(loaded, text: str, *, seed: int, steps: int, permutations: int) -> dict:
    """One validation pair's record: per method the figures averaged over the emitted characters, and the
    permutation test's median TVD and flipped share averaged the same way."""
    from attnkit.explain.faithfulness.baselines import permutation_test
    from attnkit.explain.faithfulness.evaluate import faithfulness_of
    from attnkit.tasks.seq2seq.faithfulness import step_subjects

    subjects = step_subjects(loaded, [text])[0]
    results = faithfulness_of(subjects, methods=TRANSFORMER_METHODS, erase="delete", seed=seed, steps=steps)
    record: dict = {"text": text, "tokens": len(subjects[0].tokens) if subjects else 0, "steps": len(subjects)}
    record["methods"] = {}
    for name in TRANSFORMER_METHODS:
        rows = [result.methods[name] for result in results if name in result.methods]
        taus = [r.kendall_tau.get(f"{name}|leave_one_out", r.kendall_tau.get(f"leave_one_out|{name}")) for r in results]
        if rows:
            record["methods"][name] = {
                "aopc_comprehensiveness": _mean([r.aopc_comprehensiveness for r in rows]),
                "aopc_sufficiency": _mean([r.aopc_sufficiency for r in rows]),
                "flip_fraction": _mean([r.flip_fraction for r in rows]),
                "tau_leave_one_out": _mean([t for t in taus if t is not None]),
            }
    shuffled = [permutation_test(s, n=permutations, seed=seed * 1000 + k) for k, s in enumerate(subjects)]
    shuffled = [found for found in shuffled if found is not None]
    if shuffled:
        record["permutation"] = {
            "median_tvd": _mean([found.median_tvd for found in shuffled]),
            "flipped": _mean([found.flipped for found in shuffled]),
        }
    return record


def _mean(values: list[float]) -> float | None:
    kept = [v for v in values if v == v]  # NaN (an undefined τ) left out
    return sum(kept) / len(kept) if kept else None


def _run_name(checkpoint: str) -> str:
    """``runs/dates-transformer/best`` -> ``dates-transformer`` (the run a checkpoint belongs to)."""
    path = Path(checkpoint)
    return path.parent.name if path.name in ("best", "last") and path.parent.name else path.name


def resolve_model(checkpoint: str | None) -> tuple[str, list]:
    """The checkpoint to measure (``checkpoint``, else the shipped :data:`SHIPPED`) and an id of its weights: the
    SHA-256 of each ``model.safetensors`` (the same bytes shipped or in a run are the same model).

    Raises:
        ValueError: no ``checkpoint`` and no shipped dates Transformer, or a ``checkpoint`` that does not exist.
    """
    from attnkit.pretrained import shipped_path

    name = checkpoint or SHIPPED
    folder = shipped_path(name)
    if folder is None and checkpoint is None:
        raise ValueError(f"--data dates: no {SHIPPED} is shipped yet (attnkit models); give --checkpoint RUN")
    path = folder if folder is not None else Path(checkpoint)
    weights = sorted(path.rglob("model.safetensors")) if path.is_dir() else []
    if not weights:
        raise ValueError(f"--checkpoint {checkpoint}: no trained model there")
    return name, [["sha256", _sha256(w)] for w in weights]


def _sha256(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_dates_transformer(
    paths, documents: int, threads: int | None, device: str, checkpoint: str | None = None, *, minutes=None
) -> dict:
    """The dates Transformer row on ``min(documents, PAIRS)`` seeded validation pairs (reused when unchanged;
    ``minutes``: only the pairs measured within that budget, :func:`~attnkit.experiments.faithfulness_measure.in_budget`)."""
    import attnkit
    from attnkit.data.seq2seq.registry import load_data_set
    from attnkit.experiments.bootstrap import bootstrap_interval
    from attnkit.experiments.common import read_json, write_json
    from attnkit.experiments.faithfulness_measure import IG_STEPS, PERMUTATIONS, Stopwatch, in_budget, sample_documents

    name, identity = resolve_model(checkpoint)
    data = load_data_set("dates")
    numbers = sample_documents(len(data.valid), min(documents, PAIRS))
    settings = {"model": identity, "pairs": numbers, "steps": IG_STEPS, "permutations": PERMUTATIONS}
    if minutes is not None:
        settings["minutes"] = minutes
    root = paths.runs / "faithfulness" / "dates"
    stored = read_json(root / "records.json")
    if stored and stored.get("settings") == settings:
        records, minutes = stored["records"], stored["minutes"]
    else:
        clock = Stopwatch()
        loaded = attnkit.load(name, device=device)
        measured = {  # pair number -> record, measured while the budget lasts
            n: pair_record(loaded, data.valid[n][0], seed=n, steps=IG_STEPS, permutations=PERMUTATIONS)
            for n in in_budget(numbers, minutes)
        }
        records = [measured[n] for n in sorted(measured)]
        minutes = clock.minutes()
        write_json(root / "records.json", {"settings": settings, "minutes": minutes, "records": records})
    methods = {
        method: {
            figure: bootstrap_interval([r["methods"][method][figure] for r in records if method in r["methods"]])
            for figure in FIGURES
        }
        for method in TRANSFORMER_METHODS
    }
    shuffled = [r["permutation"] for r in records if "permutation" in r]
    shipped = name if name == SHIPPED else None
    return {
        "label": f"Transformer (shipped {SHIPPED})" if shipped else f"Transformer (run {_run_name(name)})",
        "shipped": shipped,
        "checkpoint": name,
        "documents": len(records),
        "sampled": len(numbers),
        "mean_tokens": round(sum(r["tokens"] for r in records) / max(len(records), 1), 1),
        "mean_steps": round(sum(r["steps"] for r in records) / max(len(records), 1), 1),
        "minutes": {"measure": minutes},
        "methods": methods,
        "permutation": {
            figure: bootstrap_interval([row[figure] for row in shuffled]) for figure in ("median_tvd", "flipped")
        },
    }
