"""Does a translation model's attention explain each emitted token? The faithfulness tests over the source
tokens, one emitted target token at a time (layer 5): what ``attnkit faithfulness`` and
``LoadedSeq2Seq.faithfulness`` run for a seq2seq checkpoint.

    g2p = attnkit.load("runs/g2p")
    steps = g2p.faithfulness(["attention"])[0]       # one DocumentFaithfulness per emitted phoneme
    steps[0].label, steps[0].methods["attention"].comprehensiveness["10"]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from attnkit.explain.faithfulness.evaluate import faithfulness_of
from attnkit.explain.faithfulness.methods import DEFAULT_METHODS
from attnkit.explain.faithfulness.results import DocumentFaithfulness
from attnkit.tasks.seq2seq.faithfulness_subjects import Seq2SeqStepSubject

__all__ = [
    "checkpoint_faithfulness",
    "faithfulness_command",
    "seq2seq_faithfulness",
    "step_subjects",
    "text_faithfulness",
]


def seq2seq_faithfulness(
    loaded,
    texts: Sequence[str],
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
) -> list[list[DocumentFaithfulness]]:
    """For each text, greedy-decode it, then run the tests on every emitted token (``<eos>`` included) over the
    source tokens: one :class:`DocumentFaithfulness` per step, its ``label`` the emitted token."""
    texts = list(texts)
    results = []
    for number, (text, subjects) in enumerate(zip(texts, step_subjects(loaded, texts), strict=True)):
        labels = [f"{text} -> step {step + 1}" for step in range(len(subjects))]
        results.append(
            faithfulness_of(subjects, texts=labels, methods=methods, erase=erase, seed=seed + number, steps=steps)
        )
    return results


def step_subjects(loaded, texts: Sequence[str]) -> list[list[Seq2SeqStepSubject]]:
    """For each text, greedy-decode it: one :class:`Seq2SeqStepSubject` per emitted token (``<eos>`` included),
    its units the source tokens."""
    texts = list(texts)
    if not texts:
        raise ValueError("no texts to test")
    translations = loaded.translate(texts)
    vocabulary = [loaded.target_tokenizer.id_to_token(i) for i in range(loaded.model.output.out_features)]
    found = []
    for text, translation in zip(texts, translations, strict=True):
        source_ids = loaded.source_tokenizer.encode(text)
        tokens = loaded.source_tokenizer.tokens(text)[: len(source_ids)]
        target_ids = list(translation.token_ids or [])
        found.append(
            [
                Seq2SeqStepSubject(loaded.model, source_ids, target_ids, step, tokens, vocabulary)
                for step in range(len(target_ids))
            ]
        )
    return found


def text_faithfulness(
    loaded,
    texts: Sequence[str],
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
) -> list[DocumentFaithfulness]:
    """One result per text for ``attnkit explain --faithfulness``: the tests of every emitted token averaged
    (:func:`~attnkit.explain.faithfulness.steps.mean_over_steps`); ``label`` says "each emitted token"."""
    from attnkit.explain.faithfulness.steps import mean_over_steps

    per_text = seq2seq_faithfulness(loaded, texts, methods=methods, erase=erase, seed=seed, steps=steps)
    return [mean_over_steps(found, text=text) for text, found in zip(texts, per_text, strict=True)]


def faithfulness_command(args: argparse.Namespace, loaded) -> int:
    """``attnkit faithfulness`` for a seq2seq model: a table per emitted token, or one JSON object per text
    ``{"text", "translation", "steps": [the classifier's object per emitted token]}``."""
    from attnkit.explain.faithfulness.table import print_results
    from attnkit.tasks.options import read_texts

    texts = read_texts(args)
    results = seq2seq_faithfulness(
        loaded, texts, methods=args.methods, erase=args.erase, seed=args.seed, steps=args.steps
    )
    for text, per_step in zip(texts, results, strict=True):
        translation = " ".join(result.label for result in per_step)
        envelope = {"text": text, "translation": translation}
        print_results(per_step, as_json=args.json, noun="step", heading=f"{text} -> {translation}", envelope=envelope)
    return 0


def checkpoint_faithfulness(args: argparse.Namespace, checkpoint: Path, load) -> int:
    """Load ``checkpoint`` with ``load`` after the texts are read, then :func:`faithfulness_command`."""
    from attnkit.tasks.options import read_texts

    read_texts(args)  # a missing --file is refused before the model loads
    return faithfulness_command(args, load(checkpoint, device=args.device, precision=args.precision))
