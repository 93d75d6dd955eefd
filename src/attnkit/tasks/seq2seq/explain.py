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
from attnkit.tasks.seq2seq.inference import LoadedSeq2Seq
from attnkit.training.precision import autocast, to_host

__all__ = ["seq2seq_report"]


def seq2seq_report(loaded: LoadedSeq2Seq, texts: Sequence[str], out: str | Path, *, title: str | None = None) -> Path:
    """Translate ``texts`` with their attention and write the report to ``out``; returns the path written."""
    translations = loaded.translate(texts, need_weights=True)
    sections = []
    for number, (text, translation) in enumerate(zip(texts, translations, strict=True), start=1):
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
        sections.append(
            alignment_section(
                weights[:, -1].mean(1),
                source_tokens,
                target_tokens,
                title=heading,
                caption=captions.TRANSFORMER_ALIGNMENT,
            )
        )
        source_ids = torch.tensor([loaded.source_tokenizer.encode(text)], device=loaded.device)  # [1, S]
        with torch.no_grad(), autocast(loaded.device, loaded.precision):
            _, encoder_layers = loaded.model.encode(
                source_ids, torch.ones_like(source_ids, dtype=torch.bool), need_weights=True
            )
        encoder_layers = to_host(encoder_layers)
        sections.append(
            transformer_section(
                source_tokens,
                target_tokens,
                encoder_layers=[layer[0] for layer in encoder_layers],  # [H, S, S]
                cross_layers=[weights[:, layer].transpose(0, 1) for layer in range(weights.shape[1])],  # [H, T, S]
                title=f"{number}. every layer and head",
            )
        )
    return write_report(out, sections, title=title or "What the translation model attended to")
