"""An offline HTML report for a Hugging Face sequence classifier (layer 5): per text, the prediction, the last
layer's attention from the read-out token (one row per head) and attention rollout through every layer, then the
faithfulness panel (attention, rollout, flow, integrated gradients and leave-one-out side by side, the erasure
curves against random, the metrics). One self-contained page: images inlined, no script, nothing fetched.

    from attnkit.explain.faithfulness import huggingface, huggingface_report
    model, tokenizer = huggingface.load_local("path/to/model")
    huggingface_report.write_hf_report(model, tokenizer, texts, "report.html")

Shape glossary:
    H  heads   T  words
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from attnkit.explain.html import (
    Section,
    caption_html,
    colour_scale_html,
    escape,
    prediction_html,
    shaded_tokens,
    write_report,
)

__all__ = ["CAPTION", "hf_sections", "write_hf_report"]

CAPTION = (
    "Words shaded by the last layer's attention from the token the classification head reads ([CLS]), one row per "
    "head, each word the sum over its word pieces, relative to the row's largest weight; then attention rollout, "
    "which follows that token's attention down through every layer to the input words. Special tokens are left out. "
    "The panel below tests whether these weights explain the prediction."
)


def hf_sections(subjects: Sequence, results: Sequence) -> list[Section]:
    """One section per text: ``subjects`` (:class:`~attnkit.explain.faithfulness.huggingface.HuggingFaceSubject`)
    and their :class:`~attnkit.explain.faithfulness.results.DocumentFaithfulness`, in the same order."""
    from attnkit.explain.faithfulness.panel import faithfulness_panel

    if len(subjects) != len(results):
        raise ValueError(f"results: {len(results)} for {len(subjects)} text(s)")
    sections = []
    for number, (subject, result) in enumerate(zip(subjects, results, strict=True), start=1):
        heads = torch.tensor(result.details["attention_heads"], dtype=torch.float64)  # [H, T]
        rows = [
            f'<div class="attn-row" data-head="{head + 1}"><span class="attn-head">head {head + 1}</span>'
            f"{shaded_tokens(result.tokens, heads[head])}</div>"
            for head in range(heads.shape[0])
        ]
        if "rollout" in result.methods:
            rollout = torch.tensor(result.methods["rollout"].scores, dtype=torch.float64)  # [T]
            rows.append(
                '<div class="attn-row" data-method="rollout"><span class="attn-head">rollout</span>'
                f"{shaded_tokens(result.tokens, rollout)}</div>"
            )
        body = [
            f'<p class="attn-text">{escape(result.text)}</p>',
            prediction_html(subject.label_names, subject.probabilities),
            caption_html(CAPTION),
            colour_scale_html("0", "the row's largest weight"),
            '<div class="attn-rows">' + "\n".join(rows) + "</div>",
            faithfulness_panel(result),
        ]
        sections.append(Section(f"Text {number}", "\n".join(body)))
    return sections


def write_hf_report(
    model: nn.Module,
    tokenizer,
    texts: Sequence[str],
    path: str | os.PathLike[str],
    *,
    title: str = "What the Hugging Face classifier attended to, and whether it explains the prediction",
    methods: Sequence[str] | None = None,
    erase: str = "delete",
    seed: int = 0,
    steps: int = 32,
    readout: str = "first",
) -> tuple[Path, list]:
    """Run the tests on ``texts`` and write the report to ``path``; returns the path written and the results."""
    from attnkit.explain.faithfulness.evaluate import faithfulness_of
    from attnkit.explain.faithfulness.huggingface import eager_attention, subjects
    from attnkit.explain.faithfulness.methods import DEFAULT_METHODS

    texts = list(texts)
    if not texts:
        raise ValueError("no texts to test")
    with eager_attention(model):
        found = subjects(model, tokenizer, texts, readout=readout)
        results = faithfulness_of(
            found, texts=texts, methods=methods or DEFAULT_METHODS, erase=erase, seed=seed, steps=steps
        )
    return write_report(path, hf_sections(found, results), title=title), results
