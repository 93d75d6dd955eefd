"""One report section per kind of model: HAN, pooled classifier, seq2seq, Transformer, visual attention.

Shape glossary:
    S  sentences   W  words per sentence   H  heads   L  layers   T  tokens   Ts / Tt  source / target tokens
    h, w  attention grid over an image   C  classes

Every function takes the weights of **one example** (a leading batch of one, or an ``AttentionOutput``, is
accepted), returns a :class:`~attnkit.explain.html.Section` for :func:`~attnkit.explain.html.write_report`, and
escapes all the text it is given. Weight rows may be longer than their tokens when the extra positions are
padding with zero weight (as models return them); they are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnkit.explain import captions, figures, heatmaps
from attnkit.explain._weights import WeightsLike, as_weights, check_length
from attnkit.explain.html import (
    UNKNOWN_NOTE,
    Section,
    caption_html,
    colour_scale_html,
    escape,
    image_html,
    prediction_html,
    row_intensities,
    shaded_span,
    shaded_tokens,
)
from attnkit.explain.rollout import attention_rollout
from attnkit.explain.textfigure import shaded_text_figure

__all__ = ["alignment_section", "han_section", "pooling_section", "transformer_section", "visual_section"]


def han_section(
    sentences: Sequence[Sequence[str]],
    word_weights: Sequence[WeightsLike] | WeightsLike,
    sentence_weights: WeightsLike,
    *,
    label_names: Sequence[str],
    probabilities: WeightsLike,
    true_label: str | None = None,
    title: str = "Hierarchical attention",
    word_shading: str = "document",
    caption: bool = True,
    unknown: Sequence[Sequence[bool]] | None = None,
) -> Section:
    """A document as a hierarchical attention network saw it (Yang et al. 2016, Fig. 5).

    Each sentence row starts with a marker (class ``attn-sentence``) showing the sentence's weight, shaded against
    the document's most-attended sentence. Words (class ``attn-token``) are shaded by ``word_shading``:
    ``"document"`` by word × sentence weight against the document's largest product (a word of a 0.01-weight
    sentence stays pale), or ``"sentence"`` against the most-attended word of their own sentence. ``caption``: show
    the caption and colour scale (a page of many documents shows them once).

    ``sentences`` are ``S`` lists of words; ``word_weights`` one ``[W_s]`` row per sentence or a padded ``[S', W]``
    tensor, ``sentence_weights`` ``[S']`` (S' ≥ S, extra positions zero padding); ``probabilities`` ``[C]``.
    ``unknown`` flags, per sentence, the words the model read as ``[UNK]`` (marked ``attn-unk``).
    """
    if word_shading not in ("document", "sentence"):
        raise ValueError(f"word_shading: expected 'document' or 'sentence', got {word_shading!r}")
    figures.begin_section()
    word_rows, sentence_w = _han_weights(sentences, word_weights, sentence_weights)
    shades = _word_shades(word_rows, sentence_w, word_shading)  # S rows of [W_s] in [0, 1]
    lines = _han_lines(sentences, word_rows, sentence_w, shades, unknown)
    scale = captions.HAN_SCALE if word_shading == "document" else captions.HAN_SENTENCE_SCALE
    if figures.active() and sentences:
        figure_title = f"{title}: {_predicted(label_names, probabilities)}"
        figures.add_figure(
            "words-and-sentences",
            shaded_text_figure(
                sentences, word_rows, markers=sentence_w, intensities=shades, title=figure_title, scale_label=scale
            ),
        )
    document = "\n".join(lines) or '<p class="attn-empty">(empty document)</p>'
    header = prediction_html(label_names, probabilities, true_label=true_label)
    text = captions.HAN if word_shading == "document" else captions.HAN_SENTENCE
    legend = caption_html(text) + colour_scale_html("0", scale) if caption else ""
    if unknown is not None and any(any(row) for row in unknown):
        legend += caption_html(UNKNOWN_NOTE)
    return Section(title, f'{header}\n{legend}\n<div class="attn-document">\n{document}\n</div>')


def _han_weights(
    sentences: Sequence[Sequence[str]], word_weights: Sequence[WeightsLike] | WeightsLike, sentence_weights: WeightsLike
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The word weights as ``S`` rows ``[W_s]`` and the sentence weights ``[S]``, cut to the given words."""
    rows = _weight_rows(word_weights, name="word_weights")
    if len(rows) < len(sentences):
        raise ValueError(f"word_weights: {len(rows)} row(s) for {len(sentences)} sentence(s)")
    for index in range(len(sentences), len(rows)):
        if rows[index].numel() and rows[index].max() > 1e-6:
            raise ValueError(f"word_weights[{index}]: padding sentence (beyond the {len(sentences)} given) has weight")
    sentence_w = check_length(
        sentences, as_weights(sentence_weights, name="sentence_weights", ndim=1), name="sentence_weights"
    )
    word_rows = [
        check_length(words, rows[index], name=f"word_weights[{index}]") for index, words in enumerate(sentences)
    ]
    return word_rows, sentence_w


def _han_lines(
    sentences: Sequence[Sequence[str]],
    word_rows: list[torch.Tensor],
    sentence_w: torch.Tensor,
    shades: list[torch.Tensor],
    unknown: Sequence[Sequence[bool]] | None,
) -> list[str]:
    """One HTML row per sentence: its shaded weight marker, then its shaded words."""
    sentence_intensity = row_intensities(sentence_w)
    lines = []
    for index, words in enumerate(sentences):
        weight, intensity = sentence_w[index].item(), sentence_intensity[index].item()
        marker = shaded_span(
            f"{weight:.2f}", weight, intensity, css_class="attn-sentence", extra_attributes=f'data-sentence="{index}"'
        )
        tokens = shaded_tokens(words, word_rows[index], shades[index], _flags(unknown, index))
        lines.append(f'<div class="attn-sentence-row">{marker}<span class="attn-words">{tokens}</span></div>')
    return lines


def pooling_section(
    tokens: Sequence[str],
    weights: WeightsLike,
    *,
    label_names: Sequence[str] | None = None,
    probabilities: WeightsLike | None = None,
    true_label: str | None = None,
    title: str = "Attention pooling",
    caption: bool = True,
    unknown: Sequence[bool] | None = None,
) -> Section:
    """``T`` tokens shaded by a pooling layer's ``[H, T']`` or ``[T']`` weights (T' ≥ T, extra positions zero
    padding), one row (class ``attn-row``, ``data-head``) per head. ``label_names`` and ``[C]`` ``probabilities``
    (both or neither) add a prediction header; ``unknown [T]`` marks the tokens read as ``[UNK]``."""
    figures.begin_section()
    matrix = _as_heads(weights, name="weights")  # [H, T']
    matrix = check_length(tokens, matrix, name="weights")  # [H, T]
    rows = "\n".join(
        f'<div class="attn-row" data-head="{head + 1}"><span class="attn-head">head {head + 1}</span>'
        f"{shaded_tokens(tokens, matrix[head], None, None if unknown is None else list(unknown)[: len(tokens)])}</div>"
        for head in range(matrix.shape[0])
    )
    if figures.active() and tokens:
        predicted = f": {_predicted(label_names, probabilities)}" if label_names is not None else ""
        figure = shaded_text_figure(
            [tokens] * matrix.shape[0], list(matrix), title=f"{title}{predicted}", scale_label=captions.POOLING_SCALE
        )
        figures.add_figure("tokens", figure)
    header = _optional_prediction(label_names, probabilities, true_label)
    legend = caption_html(captions.POOLING) + colour_scale_html("0", captions.POOLING_SCALE) if caption else ""
    if unknown is not None and any(unknown):
        legend += caption_html(UNKNOWN_NOTE)
    return Section(title, f'{header}{legend}\n<div class="attn-rows">\n{rows}\n</div>')


def alignment_section(
    weights: WeightsLike,
    source_tokens: Sequence[str],
    target_tokens: Sequence[str],
    *,
    title: str = "Alignment",
    caption: str = captions.ALIGNMENT,
) -> Section:
    """The seq2seq alignment matrix ``[Tt, Ts]`` (rows are target steps) as an inlined heatmap, under a caption.

    The default caption fits an RNN decoder (pass ``captions.TRANSFORMER_ALIGNMENT`` for a Transformer).
    """
    figures.begin_section()
    png = heatmaps.alignment_heatmap(weights, source_tokens, target_tokens, name="alignment")
    alt = f"alignment of {len(target_tokens)} target tokens over {len(source_tokens)} source tokens"
    return Section(title, f'{caption_html(caption)}<div class="attn-figures">{image_html(png, alt=alt)}</div>')


def transformer_section(
    source_tokens: Sequence[str],
    target_tokens: Sequence[str] | None = None,
    *,
    encoder_layers: Sequence[WeightsLike] | None = None,
    decoder_layers: Sequence[WeightsLike] | None = None,
    cross_layers: Sequence[WeightsLike] | None = None,
    title: str = "Transformer attention",
) -> Section:
    """Every layer and head of a Transformer, plus attention rollout (Abnar & Zuidema 2020) for the encoder.

    Per layer: ``encoder_layers`` ``[H, Ts, Ts]``, ``decoder_layers`` ``[H, Tt, Tt]``, ``cross_layers``
    ``[H, Tt, Ts]``; the last two need ``target_tokens``.
    """
    if not (encoder_layers or decoder_layers or cross_layers):
        raise ValueError("transformer_section: pass at least one of encoder_layers, decoder_layers, cross_layers")
    if (decoder_layers or cross_layers) and target_tokens is None:
        raise ValueError("target_tokens: needed to draw decoder_layers or cross_layers")
    figures.begin_section()
    parts = [caption_html(captions.TRANSFORMER_GRID)]
    if encoder_layers:
        parts.append(
            _grid("Encoder self-attention", captions.ENCODER_GRID, encoder_layers, source_tokens, source_tokens,
                  x="source token (attended to)", y="source token (attending)", name="encoder-self-attention")
        )  # fmt: skip
        encoder = [as_weights(layer, name=f"encoder_layers[{i}]", ndim=3) for i, layer in enumerate(encoder_layers)]
        rollout = attention_rollout([layer[None] for layer in encoder])[0]  # [Ts, Ts]
        png = heatmaps.alignment_heatmap(
            rollout,
            source_tokens,
            source_tokens,
            xlabel="input token",
            ylabel="position after the last layer",
            colorbar_label="attention flow",
            name="encoder-rollout",
        )
        parts.append(
            "<h3>Encoder attention rollout</h3>"
            + caption_html(captions.ROLLOUT)
            + image_html(png, alt="encoder attention rollout")
        )
    if decoder_layers:
        parts.append(
            _grid("Decoder self-attention", captions.DECODER_GRID, decoder_layers, target_tokens, target_tokens,
                  x="target token (attended to)", y="target token (attending)", name="decoder-self-attention")
        )  # fmt: skip
    if cross_layers:
        parts.append(
            _grid("Decoder attention over the source", captions.CROSS_GRID, cross_layers, target_tokens,
                  source_tokens, x="source token", y="target token", name="cross-attention")
        )  # fmt: skip
    return Section(title, "\n".join(parts))


def visual_section(
    image: torch.Tensor | np.ndarray,
    attention: WeightsLike,
    *,
    label_names: Sequence[str] | None = None,
    probabilities: WeightsLike | None = None,
    true_label: str | None = None,
    title: str = "Visual attention",
) -> Section:
    """The image (layouts as in :func:`heatmaps.overlay_attention`), and the ``[h, w]`` or ``[H, h, w]`` attention
    map of each head upsampled and laid over it; ``label_names`` and ``[C]`` ``probabilities`` add a header."""
    figures.begin_section()
    maps = as_weights(attention, name="attention", ndim=3) if _rank(attention) >= 3 else None
    if maps is None:
        maps = as_weights(attention, name="attention", ndim=2)[None]  # [1, h, w]
    original = heatmaps.overlay_attention(image, torch.zeros(1, 1), alpha=0.0, name="image")
    pictures = [image_html(original, alt="input image", caption="image")]
    for head in range(maps.shape[0]):
        png = heatmaps.overlay_attention(image, maps[head], name=f"head-{head + 1}")
        pictures.append(image_html(png, alt=f"attention of head {head + 1}", caption=f"head {head + 1}"))
    header = _optional_prediction(label_names, probabilities, true_label)
    legend = caption_html(captions.VISUAL) + colour_scale_html("0", captions.VISUAL_SCALE)
    return Section(title, f'{header}{legend}<div class="attn-figures">{"".join(pictures)}</div>')


def _grid(
    heading: str,
    caption: str,
    layers: Sequence[WeightsLike],
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    x: str,
    y: str,
    name: str,
) -> str:
    png = heatmaps.layer_head_grid(layers, query_tokens, key_tokens, xlabel=x, ylabel=y, name=name)
    return (
        f"<h3>{escape(heading)}</h3>" + caption_html(caption) + image_html(png, alt=f"{heading}, every layer and head")
    )


def _weight_rows(weights: Sequence[WeightsLike] | WeightsLike, *, name: str) -> list[torch.Tensor]:
    """Per-sentence rows from a padded ``[S, W]`` tensor or from a list of ``[W_s]`` rows."""
    if _rank(weights) >= 2:
        return list(as_weights(weights, name=name, ndim=2))
    return [as_weights(row, name=f"{name}[{index}]", ndim=1) for index, row in enumerate(weights)]


def _as_heads(weights: WeightsLike, *, name: str) -> torch.Tensor:
    """``[H, T]`` or ``[T]`` (one head) -> ``[H, T]``."""
    if (_rank(weights) or np.ndim(weights)) >= 2:
        return as_weights(weights, name=name, ndim=2)
    return as_weights(weights, name=name, ndim=1)[None]


def _rank(weights: object) -> int:
    """Dimensions of a tensor-like input (0 for lists, whose rows are converted one by one)."""
    tensor = getattr(weights, "weights", weights)  # unwrap an AttentionOutput
    return tensor.dim() if isinstance(tensor, torch.Tensor) else getattr(tensor, "ndim", 0)


def _optional_prediction(
    label_names: Sequence[str] | None, probabilities: WeightsLike | None, true_label: str | None
) -> str:
    if (label_names is None) != (probabilities is None):
        raise ValueError("label_names and probabilities: pass both or neither")
    if label_names is None:
        return ""
    return prediction_html(label_names, probabilities, true_label=true_label) + "\n"


def _word_shades(word_rows: list[torch.Tensor], sentence_w: torch.Tensor, word_shading: str) -> list[torch.Tensor]:
    """Each sentence's word intensities in [0, 1]: word × sentence weight against the document's largest product
    (``"document"``), or each word against its own sentence's largest (``"sentence"``)."""
    if word_shading == "sentence":
        return [row_intensities(row) for row in word_rows]
    products = [row * sentence_w[index] for index, row in enumerate(word_rows)]  # S rows of [W_s]
    top = max((float(row.max()) for row in products if row.numel()), default=0.0)
    return [row / top if top > 0 else torch.zeros_like(row) for row in products]


def _predicted(label_names: Sequence[str], probabilities: WeightsLike) -> str:
    """``"predicted LABEL (0.93)"`` for a figure's title."""
    probs = as_weights(probabilities, name="probabilities", ndim=1)
    best = int(probs.argmax())
    return f"predicted {label_names[best]} ({probs[best].item():.2f})"


def _flags(unknown: Sequence[Sequence[bool]] | None, index: int) -> list[bool] | None:
    """Sentence ``index``'s ``[UNK]`` flags, or None."""
    return None if unknown is None or index >= len(unknown) else list(unknown[index])
