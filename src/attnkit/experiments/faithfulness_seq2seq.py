"""The faithfulness experiment's G2P row (layer 6): the shipped G2P model (``attnkit models``: ``g2p``, an RNN
with Luong attention) on a seeded sample of CMUdict's held-back validation words.

Two measurements per word:

* the erasure tests of :mod:`attnkit.explain.faithfulness` over the word's letters for every emitted phoneme
  (greedy decoding, deletion as the erasure), averaged over the word's phonemes: per method AOPC
  comprehensiveness and sufficiency, flip fraction and Kendall τ with leave-one-out;
* alignment: teacher-forced on the word's reference pronunciation, the letter that attention weighs most for
  each phoneme, against the letters Phonetisaurus's EM aligner (``phonetisaurus-align``, run on the training
  lexicon with these words added, the settings of its own training) gives that phoneme. A phoneme the aligner
  leaves to no letter is not counted. The floor: a letter drawn uniformly at random hits with probability
  (letters aligned to the phoneme) / (letters in the word).

Shape glossary:
    S  letters of a word   T  phonemes
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = ["ALIGN_TRAIN_WORDS", "G2P_METHODS", "WORDS", "aligned_letters", "parse_alignment", "run_g2p"]

WORDS = 100  # validation words sampled
ALIGN_TRAIN_WORDS = 5_000  # training pairs the EM aligner also reads (seeded sample), beside the sampled words
G2P_METHODS = ("attention", "gradient_x_input", "integrated_gradients", "leave_one_out", "random")
SHIPPED = "g2p"
FIGURES = ("aopc_comprehensiveness", "aopc_sufficiency", "flip_fraction", "tau_leave_one_out")


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
    record: dict = {"word": word, "letters": len(word), "phonemes": len(steps), "methods": {}}
    for name in G2P_METHODS:
        rows = [step.methods[name] for step in steps if name in step.methods]
        taus = [
            step.kendall_tau.get(f"{name}|leave_one_out", step.kendall_tau.get(f"leave_one_out|{name}"))
            for step in steps
        ]
        if rows:
            record["methods"][name] = {
                "aopc_comprehensiveness": sum(r.aopc_comprehensiveness for r in rows) / len(rows),
                "aopc_sufficiency": sum(r.aopc_sufficiency for r in rows) / len(rows),
                "flip_fraction": sum(r.flip_fraction for r in rows) / len(rows),
                "tau_leave_one_out": _mean([t for t in taus if t is not None]),
            }
    if alignment is not None:
        argmax = attention_argmax(loaded, word, phonemes)
        counted = [(a, letters) for a, letters in zip(argmax, alignment, strict=True) if letters]
        record["alignment"] = {
            "hits": sum(a in letters for a, letters in counted),
            "counted": len(counted),
            "chance": sum(len(letters) / len(word) for _, letters in counted),
        }
    return record


def _mean(values: list[float]) -> float | None:
    kept = [v for v in values if v == v]  # NaN (an undefined τ) left out
    return sum(kept) / len(kept) if kept else None


def run_g2p(paths, documents: int, threads: int | None, device: str, *, minutes: float | None = None) -> dict:
    """The G2P row: the shipped model on ``min(documents, WORDS)`` seeded validation words (reused when unchanged;
    ``minutes``: only the words measured within that budget, :func:`~attnkit.experiments.faithfulness_measure.in_budget`)."""
    import attnkit
    from attnkit.data.seq2seq.registry import load_data_set
    from attnkit.experiments.bootstrap import bootstrap_interval
    from attnkit.experiments.common import read_json, write_json
    from attnkit.experiments.faithfulness_measure import IG_STEPS, Stopwatch, in_budget, sample_documents
    from attnkit.pretrained import read_card

    card = read_card(SHIPPED)
    data = load_data_set(card["data"])
    numbers = sample_documents(len(data.valid), min(documents, WORDS))
    pairs = [data.valid[n] for n in numbers]
    settings = {"model": [SHIPPED, card["measured"], card["value"]], "words": numbers, "align": ALIGN_TRAIN_WORDS}
    if minutes is not None:
        settings["minutes"] = minutes
    root = paths.runs / "faithfulness" / "cmudict"
    stored = read_json(root / "records.json")
    if stored and stored.get("settings") == settings:
        records, minutes = stored["records"], stored["minutes"]
    else:
        clock = Stopwatch()
        train = random.Random(0).sample(data.train, min(ALIGN_TRAIN_WORDS, len(data.train)))
        alignments = aligned_letters(pairs, train, root / "align")
        loaded = attnkit.load(SHIPPED, device=device)
        measured = {  # position in the sample -> record, measured while the budget lasts
            i: _word_record(loaded, *pairs[i], alignments.get(pairs[i][0]), seed=numbers[i], steps=IG_STEPS)
            for i in in_budget(range(len(numbers)), minutes)
        }
        records = [measured[i] for i in sorted(measured)]
        minutes = clock.minutes()
        write_json(root / "records.json", {"settings": settings, "minutes": minutes, "records": records})
    methods = {
        name: {
            figure: bootstrap_interval([r["methods"][name][figure] for r in records if name in r["methods"]])
            for figure in FIGURES
        }
        for name in G2P_METHODS
    }
    aligned = [r["alignment"] for r in records if r.get("alignment") and r["alignment"]["counted"]]
    return {
        "label": f"RNN + Luong attention (shipped {SHIPPED})",
        "shipped": SHIPPED,
        "test_wer": card["value"],
        "documents": len(records),
        "sampled": len(numbers),
        "mean_tokens": round(sum(r["letters"] for r in records) / max(len(records), 1), 1),
        "mean_phonemes": round(sum(r["phonemes"] for r in records) / max(len(records), 1), 1),
        "minutes": {"measure": minutes},
        "methods": methods,
        "alignment": {
            "words": len(aligned),
            "agreement": bootstrap_interval([100 * a["hits"] / a["counted"] for a in aligned]),
            "chance": bootstrap_interval([100 * a["chance"] / a["counted"] for a in aligned]),
        },
    }
