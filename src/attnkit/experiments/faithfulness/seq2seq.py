"""The faithfulness experiment's seq2seq rows (layer 6): the G2P RNN (``cmudict``) and the dates Transformer (``dates``),
each on a seeded sample of held-back validation pairs, greedy-decoded. Per emitted token, over the source
characters, the erasure tests of :mod:`attnkit.explain.faithfulness` (deletion); a pair's figures are the means over
its emitted tokens, the intervals are over the pairs.

G2P also measures alignment: teacher-forced on the reference pronunciation, the letter attention weighs most for
each phoneme, against the letters Phonetisaurus's EM aligner (run on the training lexicon with these words added)
gives that phoneme; a phoneme aligned to no letter is not counted. The floor: a random letter hits with probability
(letters aligned to the phoneme) / (letters in the word). The dates Transformer (the shipped ``dates-transformer``,
or ``--checkpoint RUN``) adds Jain & Wallace's permutation test, every decoder layer's cross-attention shuffled.

Shape glossary:
    S  source characters (letters)   T  emitted tokens (phonemes, characters)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.experiments.faithfulness.measure import _defined, intervals, method_figures
from attnkit.explain.faithfulness.methods import METHODS

__all__ = [
    "ALIGN_TRAIN_WORDS",
    "DATES_MODEL",
    "G2P_METHODS",
    "G2P_MODEL",
    "PAIRS",
    "TRANSFORMER_METHODS",
    "WORDS",
    "aligned_letters",
    "pair_record",
    "parse_alignment",
    "resolve_model",
    "run_dates_transformer",
    "run_g2p",
]

WORDS = 100  # validation words sampled
ALIGN_TRAIN_WORDS = 5_000  # training pairs the EM aligner also reads (seeded sample), beside the sampled words
G2P_METHODS = ("attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random")
G2P_MODEL = "g2p"
PAIRS = 100  # validation pairs sampled at most
DATES_MODEL = "dates-transformer"
TRANSFORMER_METHODS = METHODS  # every method: a Transformer has layers to roll out and a flow graph


def parse_alignment(line: str) -> tuple[str, list[list[int]]]:
    """One line of ``phonetisaurus-align``'s corpus (``p|h}F o}OW n}N e}_``) -> the word and, for each phoneme in
    order, the positions of the letters it is aligned with (``"phone", [[0, 1], [2], [3]]``)."""
    letters: list[str] = []
    phonemes: list[list[int]] = []
    for chunk in line.split():
        graphemes, _, sounds = chunk.rpartition("}")
        start = len(letters)
        letters += graphemes.split("|") if graphemes != "_" else []
        where = list(range(start, len(letters)))
        phonemes += [where for sound in sounds.split("|") if sound != "_"]
    return "".join(letters), phonemes


def aligned_letters(pairs: Sequence[tuple[str, str]], train: Sequence[tuple[str, str]], workdir: Path) -> dict:
    """``{word: [letter positions per phoneme]}`` for ``pairs`` from Phonetisaurus's EM aligner run on ``pairs`` and
    ``train`` together (the settings of :func:`~attnkit.tasks.seq2seq.phonetisaurus.train_phonetisaurus`)."""
    from attnkit.tasks.seq2seq.phonetisaurus import _run, find_tools, write_lexicon

    tools = find_tools()
    workdir.mkdir(parents=True, exist_ok=True)
    lexicon = write_lexicon([*pairs, *train], workdir / "lexicon.tsv")
    corpus = workdir / "aligned.corpus"
    command = [
        tools.program("phonetisaurus-align"),
        f"--input={lexicon}",
        f"--ofile={corpus}",
        "--seq1_del=false",
        "--seq2_del=true",
        "--seq1_max=2",
        "--seq2_max=2",
        "--grow=false",
    ]
    _run(tools, command, workdir / "align.log")
    wanted = {word: len(phonemes.split()) for word, phonemes in pairs}
    found: dict[str, list[list[int]]] = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        word, positions = parse_alignment(line)
        if word in wanted and word not in found and len(positions) == wanted[word]:
            found[word] = positions
    return found


def attention_argmax(loaded, word: str, phonemes: str) -> list[int]:
    """Teacher-forced on ``phonemes``, the letter attention weighs most for each phoneme: ``[T]`` positions."""
    from attnkit.data.seq2seq.vocab import BOS_ID

    source = torch.tensor([loaded.source_tokenizer.encode(word)], dtype=torch.long)  # [1, S]
    target = [loaded.target_tokenizer.token_to_id(p) for p in phonemes.split()]
    target_in = torch.tensor([[BOS_ID, *target]], dtype=torch.long)  # [1, T + 1]
    device = next(loaded.model.parameters()).device
    loaded.model.eval()
    with torch.no_grad():
        out = loaded.model(
            source.to(device),
            torch.ones_like(source, dtype=torch.bool).to(device),
            target_in.to(device),
            need_weights=True,
        )
    return out.attention[0, : len(target)].argmax(-1).tolist()  # [T]


def _word_record(loaded, word: str, phonemes: str, alignment: list[list[int]] | None, *, seed: int, steps: int) -> dict:
    from attnkit.tasks.seq2seq.faithfulness import seq2seq_faithfulness

    steps = seq2seq_faithfulness(loaded, [word], methods=G2P_METHODS, erase="delete", seed=seed, steps=steps)[0]
    record = {"word": word, "letters": len(word), "phonemes": len(steps)}
    record["methods"] = method_figures(steps, names=G2P_METHODS)
    if alignment is not None:
        argmax = attention_argmax(loaded, word, phonemes)
        counted = [(a, letters) for a, letters in zip(argmax, alignment, strict=True) if letters]
        record["alignment"] = {
            "hits": sum(a in letters for a, letters in counted),
            "counted": len(counted),
            "chance": sum(len(letters) / len(word) for _, letters in counted),
        }
    return record


def run_g2p(paths, documents: int, threads: int | None, device: str, *, minutes: float | None = None) -> dict:
    """The G2P row: the shipped model on ``min(documents, WORDS)`` seeded validation words (reused when unchanged;
    ``minutes``: only the words measured within that budget, :func:`.measure.in_budget`)."""
    import attnkit
    from attnkit.data.seq2seq.registry import load_data_set
    from attnkit.experiments.bootstrap import bootstrap_interval
    from attnkit.experiments.faithfulness.measure import IG_STEPS, in_budget, reuse_or_measure, sample_documents
    from attnkit.pretrained import read_card

    card = read_card(G2P_MODEL)
    data = load_data_set(card["data"])
    numbers = sample_documents(len(data.valid), min(documents, WORDS))
    pairs = [data.valid[n] for n in numbers]
    settings = {"model": [G2P_MODEL, card["measured"], card["value"]], "words": numbers, "align": ALIGN_TRAIN_WORDS}
    root = paths.runs / "faithfulness" / "cmudict"

    def measure() -> list[dict]:
        train = random.Random(0).sample(data.train, min(ALIGN_TRAIN_WORDS, len(data.train)))
        alignments = aligned_letters(pairs, train, root / "align")
        loaded = attnkit.load(G2P_MODEL, device=device)
        measured = {  # position in the sample -> record, measured while the budget lasts
            i: _word_record(loaded, *pairs[i], alignments.get(pairs[i][0]), seed=numbers[i], steps=IG_STEPS)
            for i in in_budget(range(len(numbers)), minutes)
        }
        return [measured[i] for i in sorted(measured)]

    records, spent = reuse_or_measure(root / "records.json", settings, measure, minutes=minutes)
    aligned = [r["alignment"] for r in records if r.get("alignment") and r["alignment"]["counted"]]
    return {
        "label": f"RNN + Luong attention (shipped {G2P_MODEL})",
        "shipped": G2P_MODEL,
        "test_wer": card["value"],
        **_measured(records, numbers, spent, intervals(records, G2P_METHODS), tokens="letters", per="phonemes"),
        "alignment": {
            "words": len(aligned),
            "agreement": bootstrap_interval([100 * a["hits"] / a["counted"] for a in aligned]),
            "chance": bootstrap_interval([100 * a["chance"] / a["counted"] for a in aligned]),
        },
    }


def pair_record(loaded, text: str, *, seed: int, steps: int, permutations: int) -> dict:
    """One validation pair's record: per method the figures averaged over the emitted characters, and the
    permutation test's median TVD and flipped share averaged the same way."""
    from attnkit.explain.faithfulness.baselines import permutation_test
    from attnkit.explain.faithfulness.evaluate import faithfulness_of
    from attnkit.tasks.seq2seq.faithfulness import step_subjects

    subjects = step_subjects(loaded, [text])[0]
    results = faithfulness_of(subjects, methods=TRANSFORMER_METHODS, erase="delete", seed=seed, steps=steps)
    record: dict = {"text": text, "tokens": len(subjects[0].tokens) if subjects else 0, "steps": len(subjects)}
    record["methods"] = method_figures(results, names=TRANSFORMER_METHODS)
    shuffled = [permutation_test(s, n=permutations, seed=seed * 1000 + k) for k, s in enumerate(subjects)]
    shuffled = [found for found in shuffled if found is not None]
    if shuffled:
        record["permutation"] = {
            "median_tvd": _defined([found.median_tvd for found in shuffled]),
            "flipped": _defined([found.flipped for found in shuffled]),
        }
    return record


def _measured(records: list[dict], numbers: list[int], spent: float, methods: dict, *, tokens: str, per: str) -> dict:
    """A row's sample: the records measured of those sampled, the mean of their ``tokens`` (source length) and of
    their ``per`` (emitted tokens), the measuring minutes and the methods' intervals."""

    def mean(key: str) -> float:
        return round(sum(r[key] for r in records) / max(len(records), 1), 1)

    sample = {"documents": len(records), "sampled": len(numbers), "mean_tokens": mean(tokens), f"mean_{per}": mean(per)}
    return {**sample, "minutes": {"measure": spent}, "methods": methods}


def _run_name(checkpoint: str) -> str:
    """``runs/dates-transformer/best`` -> ``dates-transformer`` (the run a checkpoint belongs to)."""
    path = Path(checkpoint)
    return path.parent.name if path.name in ("best", "last") and path.parent.name else path.name


def resolve_model(checkpoint: str | None) -> tuple[str, list]:
    """The checkpoint to measure (``checkpoint``, else the shipped :data:`DATES_MODEL`) and an id of its weights: the
    SHA-256 of each ``model.safetensors`` (the same bytes shipped or in a run are the same model). ``checkpoint`` is
    read by the rule of every command (:func:`~attnkit.checkpointing.resolve_checkpoint`); anything but a seq2seq
    Transformer trained on dates is refused."""
    from attnkit.checkpointing import read_config_of_kind, resolve_checkpoint
    from attnkit.pretrained import shipped_path
    from attnkit.tasks.run.manifest import file_sha256

    if checkpoint is None:
        path = shipped_path(DATES_MODEL)
        if path is None:
            raise ValueError(f"--data dates: no {DATES_MODEL} is shipped yet (attnkit models); give --checkpoint RUN")
    else:
        path = resolve_checkpoint(checkpoint)
    config = read_config_of_kind(path, "seq2seq")
    model, data = (config.get("model") or {}).get("model"), config.get("data")
    if model != "transformer" or data not in (None, "dates"):
        raise ValueError(
            f"--checkpoint {checkpoint}: a seq2seq {model} trained on {data}; --data dates measures a Transformer "
            "trained on dates"
        )
    weights = sorted(path.rglob("model.safetensors"))
    if not weights:
        raise ValueError(f"--checkpoint {checkpoint}: no trained model there")
    return checkpoint or DATES_MODEL, [["sha256", file_sha256(w)] for w in weights]


def run_dates_transformer(
    paths, documents: int, threads: int | None, device: str, checkpoint: str | None = None, *, minutes=None
) -> dict:
    """The dates Transformer row on ``min(documents, PAIRS)`` seeded validation pairs (reused when unchanged;
    ``minutes``: only the pairs measured within that budget, :func:`.measure.in_budget`)."""
    import attnkit
    from attnkit.data.seq2seq.registry import load_data_set
    from attnkit.experiments.bootstrap import bootstrap_interval
    from attnkit.experiments.faithfulness.measure import (
        IG_STEPS,
        PERMUTATIONS,
        in_budget,
        reuse_or_measure,
        sample_documents,
    )

    name, identity = resolve_model(checkpoint)
    data = load_data_set("dates")
    numbers = sample_documents(len(data.valid), min(documents, PAIRS))
    settings = {"model": identity, "pairs": numbers, "steps": IG_STEPS, "permutations": PERMUTATIONS}

    def measure() -> list[dict]:
        loaded = attnkit.load(name, device=device)
        measured = {  # pair number -> record, measured while the budget lasts
            n: pair_record(loaded, data.valid[n][0], seed=n, steps=IG_STEPS, permutations=PERMUTATIONS)
            for n in in_budget(numbers, minutes)
        }
        return [measured[n] for n in sorted(measured)]

    records, spent = reuse_or_measure(
        paths.runs / "faithfulness" / "dates" / "records.json", settings, measure, minutes=minutes
    )
    shuffled = [r["permutation"] for r in records if "permutation" in r]
    shipped = name if name == DATES_MODEL else None
    return {
        "label": f"Transformer (shipped {DATES_MODEL})" if shipped else f"Transformer (run {_run_name(name)})",
        "shipped": shipped,
        "checkpoint": name,
        **_measured(records, numbers, spent, intervals(records, TRANSFORMER_METHODS), tokens="tokens", per="steps"),
        "permutation": {
            figure: bootstrap_interval([row[figure] for row in shuffled]) for figure in ("median_tvd", "flipped")
        },
    }
