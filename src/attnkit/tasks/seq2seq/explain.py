"""The ``attnkit explain`` report of a seq2seq model (layer 5): per text, the source x target alignment; for the
Transformer also every layer and head of the decoder's cross-attention and the encoder's self-attention.

Shape glossary:
    S  source tokens   T  decoded tokens   L  layers   H  heads
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.explain import captions
from attnkit.explain.html import write_report
from attnkit.explain.sections import alignment_section, transformer_section
from attnkit.runtime.devices import autocast, to_host
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq

__all__ = ["seq2seq_report"]


def seq2seq_report(
    loaded: LoadedSeq2Seq,
    texts: Sequence[str],
    out: str | Path,
    *,
    title: str | None = None,
    faithfulness: Sequence | None = None,
) -> Path:
    """Translate ``texts`` with their attention and write the report to ``out``; returns the path written.
    ``faithfulness``: one result per text (its emitted tokens' tests averaged), shown under its alignment."""
    if faithfulness is not None and len(faithfulness) != len(texts):
        raise ValueError(f"faithfulness: {len(faithfulness)} result(s) for {len(texts)} text(s)")
    translations = loaded.translate(texts, need_weights=True)
    sections, starts = [], []  # starts: each text's first section (where its panel goes)
    for number, (text, translation) in enumerate(zip(texts, translations, strict=True), start=1):
        starts.append(len(sections))
        source_tokens = loaded.source_tokenizer.tokens(text)
        target_tokens = [loaded.target_tokenizer.id_to_token(i) for i in translation.token_ids or []]
        heading = f"{number}. {text} → {translation.text}"
        weights = translation.attention  # RNN [T, S]; Transformer [T, L, H, S]; None without attention
        if weights is None:
            raise ValueError(f"{loaded.config.model.get('model')} model without attention: nothing to explain")
        if weights.dim() == 2:
            sections.append(alignment_section(weights, source_tokens, target_tokens, title=heading))
            continue
        # the Transformer: the last layer's head-averaged alignment, then every layer and head
        caption = captions.TRANSFORMER_ALIGNMENT
        sections.append(
            alignment_section(weights[:, -1].mean(1), source_tokens, target_tokens, title=heading, caption=caption)
        )
        source_ids = torch.tensor([loaded.source_tokenizer.encode(text)], device=loaded.device)  # [1, S]
        with torch.no_grad(), autocast(loaded.device, loaded.precision):
            _, encoder_layers = loaded.model.encode(
                source_ids, torch.ones_like(source_ids, dtype=torch.bool), need_weights=True
            )
        encoder = [layer[0] for layer in to_host(encoder_layers)]  # L x [H, S, S]
        cross = [weights[:, layer].transpose(0, 1) for layer in range(weights.shape[1])]  # L x [H, T, S]
        every = f"{number}. every layer and head"
        sections.append(
            transformer_section(source_tokens, target_tokens, encoder_layers=encoder, cross_layers=cross, title=every)
        )
    for start, result in zip(starts, faithfulness or [], strict=False):
        sections[start] = _with_panel(sections[start], result)
    return write_report(out, sections, title=title or "What the translation model attended to")


STEPS_NOTE = (
    "Each figure is the mean over the emitted tokens: each token's prediction is tested over the source tokens "
    "(the decoder reads the decoded prefix), then averaged. attnkit faithfulness gives each token's own tests."
)


def _with_panel(section, result) -> object:
    """``section`` with the faithfulness panel of ``result`` under its body."""
    from attnkit.explain.faithfulness.panel import faithfulness_panel
    from attnkit.explain.html import Section, caption_html

    return Section(section.title, section.body + "\n" + faithfulness_panel(result) + caption_html(STEPS_NOTE))
