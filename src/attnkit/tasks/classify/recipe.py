"""The faithful-attention recipe of a classifier (issue #38), where people meet it (layer 5; no torch at import):
the options of ``attnkit train classify`` that choose it, and the part of an ``attnkit explain`` report that states
it (the values live in :class:`~attnkit.tasks.classify.config.ClassifierConfig`).
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Mapping
from typing import Any

from attnkit.tasks.options import non_negative_float, non_negative_int

__all__ = [
    "FAITHFUL_VALUE_LAYER",
    "add_recipe_arguments",
    "apply_recipe_defaults",
    "pools_by_attention",
    "recipe_lines",
    "recipe_section",
]

# What ``train classify`` gives wherever the model pools by attention, unless --attention-values / --value-layer say
# otherwise: the recipe ``attnkit experiment faithful-attention`` confirms on test as ``embedding-values-layer``
# (docs/results.md, "Faithful attention"): the states choose the weights, each word's value is a per-word layer of
# this many units over its embedding.
FAITHFUL_VALUE_LAYER = 256

_VALUES = {"states": "the encoder's states", "embeddings": "the words' own embeddings (scored by the encoder's states)"}
_TASC_SHADING = "; the shading shows the attention weights before the per-word scores multiply them"


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``faithful attention`` options of ``attnkit train classify``."""
    faithful = parser.add_argument_group(
        "faithful attention",
        "how the attention is trained to be the explanation (issue #38; the defaults are the recipe the "
        "faithful-attention experiment chose: the words' own values through a per-word layer, docs/results.md): "
        "stored in the checkpoint, shown by attnkit explain, kept by --init-from and --resume",
    )
    faithful.add_argument(
        "--attention-distribution",
        choices=["softmax", "sparsemax", "entmax15"],
        default="softmax",
        help="the distribution of every attention pooling (HAN: word and sentence level; pooled: attention and "
        "multihead): softmax (default, dense), sparsemax (exact zeros for low scores) or entmax15 (between the two); "
        "padding is never weighted and an empty sentence still pools to zeros",
    )
    faithful.add_argument(
        "--task-scaling",
        choices=["none", "lin", "feat", "conv"],
        default="none",
        help="TaSc (Chrysostomou & Aletras 2021): multiply the attention weights, before the weighted sum, by a "
        "learned non-contextual score per word read from its own embedding: lin (a scalar per word), feat (a vector "
        "per word, dotted with the embedding), conv (a width-1 convolution over the lin-scaled embedding); HAN: at "
        "the word level. The report shows the attention weights themselves (default none)",
    )
    faithful.add_argument(
        "--encoder-diversity",
        type=non_negative_float,
        default=0.0,
        metavar="LAMBDA",
        help="Diversity LSTM (Mohankumar et al. 2020): add LAMBDA x the conicity of the encoder's states (mean "
        "|cosine| of each real token's state with their mean; padding never counts) to the training loss, so "
        "that attention over them cannot hide the decision; HAN: both BiGRUs; pooled: needs an encoder (default 0: "
        "off)",
    )
    faithful.add_argument(
        "--attention-values",
        choices=["states", "embeddings"],
        default=None,
        help="what every attention pooling averages: embeddings (each word's own input vector, through "
        "--value-layer, while the encoder's states still choose the weights: a weight then multiplies one word and "
        "nothing of its neighbours, as Tutek & Snajder 2020 ask of attention that explains, and the logit is one "
        "part per word; HAN: the sentence attention averages the sentence vectors so made) or states (the "
        "encoder's, as every model before this default). Default: embeddings wherever the model pools by "
        "attention (HAN; pooled with attention or multihead pooling), else states",
    )
    faithful.add_argument(
        "--value-layer",
        type=non_negative_int,
        default=None,
        metavar="N",
        help="with --attention-values embeddings: average a per-word layer GELU(W e + b) of N units instead of the "
        "embedding e itself, so that the classifier reads richer word features while the logit stays one part per "
        f"word; 0: the embeddings themselves (default: {FAITHFUL_VALUE_LAYER} with embeddings, else 0)",
    )


def pools_by_attention(model: str, pooling: str) -> bool:
    """Whether a classifier pools by attention (the HAN always; pooled models with attention or multihead pooling):
    where the faithful-attention options act."""
    return model == "han" or pooling in ("attention", "multihead")


def apply_recipe_defaults(args: argparse.Namespace) -> None:
    """Fill ``--attention-values`` and ``--value-layer`` where they were not given (``None``): the faithful recipe
    (embeddings through a layer of :data:`FAITHFUL_VALUE_LAYER` units) wherever the model pools by attention, else
    the states. Read once, here, at the command line; the config and the run's manifest record what was filled in."""
    if args.attention_values is None:
        args.attention_values = "embeddings" if pools_by_attention(args.model, args.pooling) else "states"
    if args.value_layer is None:
        args.value_layer = FAITHFUL_VALUE_LAYER if args.attention_values == "embeddings" else 0


def recipe_lines(recipe: Mapping[str, Any]) -> list[str]:
    """A config's ``recipe()`` as short sentences for people (``"attention distribution: sparsemax"``, ...)."""
    scaling = recipe["task_scaling"]
    diversity = recipe["encoder_diversity"]
    return [
        f"model: {recipe['model']} (encoder {recipe['encoder']}, pooling {recipe['pooling']})",
        f"attention distribution: {recipe['attention_distribution']}",
        f"task scaling (TaSc): {scaling}" + ("" if scaling == "none" else _TASC_SHADING),
        f"encoder diversity (conicity penalty): {'off' if not diversity else f'λ = {diversity:g}'}",
        f"attention averages: {_VALUES[recipe.get('attention_values', 'states')]}" + _value_layer(recipe),
        f"attends to: {'content words only' if recipe['attend'] == 'content' else 'every token'}",
    ]


def _value_layer(recipe: Mapping[str, Any]) -> str:
    width = recipe.get("value_layer", 0)
    return f", each through a per-word layer of {width} units" if width else ""


def recipe_section(recipe: Mapping[str, Any]) -> tuple[str, str]:
    """``(title, body HTML)`` of the report's part that states the recipe: a list for people, and the recipe as
    JSON in the element's ``data-recipe`` attribute for programs (everything escaped)."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in recipe_lines(recipe))
    data = html.escape(json.dumps(dict(recipe), sort_keys=True), quote=True)
    return "How this model was trained to attend", f'<ul class="attn-recipe" data-recipe="{data}">{items}</ul>'
