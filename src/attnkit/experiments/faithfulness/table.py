"""The faithfulness section of ``docs/results.md``, rendered from ``docs/results/faithfulness.json`` (layer 6)."""

from __future__ import annotations

from attnkit.explain.faithfulness.methods import METHODS

__all__ = ["render_faithfulness"]

COMMAND = "attnkit experiment faithfulness --data fine-foods r8 r52 20ng digits cmudict"
METHOD_ORDER = tuple(METHODS)  # the table's order
MODEL_ORDER = ("han", "pooled", "pooled_bigru", "pooled_transformer")
INTRO = """Does the attention explain the prediction? The shipped models where they exist (`attnkit models`;
the row names them) and short models otherwise (GloVe 50d, one attention pooling, at most 4 minutes of training
each), tested on a seeded sample of test documents per model (the count is in each row: at the command's defaults
200 are sampled and measured in a seeded random order for at most 8 minutes, so that a row's measuring and its
uniform accuracy pass stay within 10 minutes on one core; training is timed apart) with deletion as the
erasure (a deleted token leaves the sequence). Per method: AOPC comprehensiveness (the mean drop in p(predicted
class) when its top 1/5/10/20/50 % tokens are deleted; higher = more faithful), AOPC sufficiency (the drop when only
they are kept; lower = more faithful), the fraction of tokens deleted, most important first, before the decision
flips (lower = more faithful; 1.00 = never) and Kendall τ with leave-one-out. Every method must be read against
`random`. Per model: Jain & Wallace's permutation test (attention shuffled {permutations} times among the real
tokens: median total-variation distance of the output, share of flipped decisions) and Wiegreffe & Pinter's
uniform baseline (test accuracy with learned attention minus the same model trained with uniform attention, on the
whole test split). Brackets: 95 % bootstrap intervals over the documents ({resamples} resamples). Integrated
gradients: {steps} steps."""


def render_faithfulness(table: dict | None) -> str:
    """The section's Markdown (a "not run yet" line when there is no JSON)."""
    from attnkit.experiments.bootstrap import RESAMPLES
    from attnkit.experiments.faithfulness.measure import PERMUTATIONS

    lines = ["## Faithfulness of attention: erasure, permutation and uniform-attention tests", ""]
    if not table or not table.get("data"):
        return "\n".join(lines) + f"\n_Not run yet: `{COMMAND}`._\n"
    lines += [
        INTRO.format(permutations=PERMUTATIONS, resamples=RESAMPLES, steps=table["integrated_gradients_steps"]),
        "",
    ]
    for data, section in table["data"].items():
        lines += [f"### {data}", "", f"`{section['command']}`", ""]
        if data in OTHER_SECTIONS:
            lines += [*OTHER_SECTIONS[data](section["models"]), ""]
            continue
        models = dict(sorted(section["models"].items(), key=lambda item: _place(item[0])))
        lines += [*_model_table(models), "", *_method_table(models), ""]
    return "\n".join(lines)


def _vision_table(models: dict) -> list[str]:
    lines = [
        "Deletion / insertion over the grid cells (Petsiuk et al. 2018 over cells, not pixels): p(predicted "
        "class) as the cells leave the attention pooling, most important first (deletion AUC: lower = more "
        "faithful) or enter an empty grid in that order (insertion AUC: higher = more faithful).",
        "",
        "| model | images (cells) | method | deletion AUC ↓ | insertion AUC ↑ | minutes |",
        "|---|---|---|---|---|---|",
    ]
    return lines + [
        f"| {row['label']} | {row['documents']} ({row['cells']}) | {method.replace('_', ' ')} "
        f"| {_interval(found['deletion_auc'])} | {_interval(found['insertion_auc'])} | {row['minutes']['measure']:.1f} |"
        for row, method, found in _methods(models)
    ]


def _g2p_table(models: dict) -> list[str]:
    lines = [
        "Per emitted phoneme over the word's letters (greedy decoding, deletion), averaged over each word's "
        "phonemes; intervals over the words. Alignment: teacher-forced on the reference pronunciation, the share "
        "of phonemes whose most-attended letter is one Phonetisaurus's EM aligner gives them (a phoneme aligned to "
        "no letter is not counted), against a letter drawn at random.",
        "",
        "| model | words (letters, phonemes) | attention argmax = EM alignment (%) | random letter (%) |",
        "|---|---|---|---|",
    ]
    for row in models.values():
        alignment = row["alignment"]
        lines.append(
            f"| {row['label']} | {row['documents']} ({row['mean_tokens']:.1f}, {row['mean_phonemes']:.1f}) "
            f"| {_interval(alignment['agreement'], digits=1)} | {_interval(alignment['chance'], digits=1)} |"
        )
    return [*lines, "", *_method_table(models)]


def _model_table(models: dict) -> list[str]:
    lines = [
        "| model | test acc. | uniform attention acc. | learned − uniform (points) | permutation: median TVD "
        "| permutation: flipped | documents (mean tokens) | minutes: train / measure |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in models.values():
        permutation = row.get("permutation") or {}
        tvd = _interval(permutation.get("median_tvd"), digits=3)
        flipped = _interval(permutation.get("flipped"), digits=3)
        minutes = row["minutes"]
        lines.append(
            f"| {row['label']} | {row['uniform']['accuracy']:.2f} | {_number(row['uniform']['uniform_accuracy'])} "
            f"| {_interval(row['uniform']['difference'], digits=2)} | {tvd} | {flipped} "
            f"| {row['documents']} ({row['mean_tokens']:.0f}) | {minutes['train']:.1f} / {minutes['measure']:.1f} |"
        )
    return lines


def _method_table(models: dict) -> list[str]:
    lines = [
        "| model | method | AOPC comprehensiveness ↑ | AOPC sufficiency ↓ | flip fraction ↓ | τ with leave-one-out |",
        "|---|---|---|---|---|---|",
    ]
    for row, method, found in _methods(models):
        tau = "–" if method == "leave_one_out" else _interval(found["tau_leave_one_out"])
        lines.append(
            f"| {row['label']} | {method.replace('_', ' ')} | {_interval(found['aopc_comprehensiveness'])} "
            f"| {_interval(found['aopc_sufficiency'])} | {_interval(found['flip_fraction'], digits=2)} | {tau} |"
        )
    return lines


def _methods(models: dict) -> list[tuple[dict, str, dict]]:
    """``(row, method, its figures)`` for every method each row measured, rows in order, methods in the table's."""
    return [(row, m, row["methods"][m]) for row in models.values() for m in METHOD_ORDER if m in row["methods"]]


def _transformer_table(models: dict) -> list[str]:
    lines = [
        "Per emitted character over the source characters (greedy decoding, deletion), averaged over each pair's "
        "characters; intervals over the pairs. Attention: the last decoder layer's cross-attention, heads averaged; "
        "rollout and flow follow it down through the encoder's self-attention (Abnar & Zuidema 2020). Permutation: "
        "every decoder layer's cross-attention shuffled among the source characters.",
        "",
        "| model | pairs (source chars, emitted chars) | permutation: median TVD | permutation: flipped | minutes |",
        "|---|---|---|---|---|",
    ]
    for row in models.values():
        permutation = row.get("permutation") or {}
        lines.append(
            f"| {row['label']} | {row['documents']} ({row['mean_tokens']:.1f}, {row['mean_steps']:.1f}) "
            f"| {_interval(permutation.get('median_tvd'))} | {_interval(permutation.get('flipped'))} "
            f"| {row['minutes']['measure']:.1f} |"
        )
    return [*lines, "", *_method_table(models)]


OTHER_SECTIONS = {"digits": _vision_table, "cmudict": _g2p_table, "dates": _transformer_table}


def _place(model: str) -> int:
    """The models in the experiment's order (HAN, pooled, + BiGRU, + Transformer), whatever order they ran in."""
    return MODEL_ORDER.index(model) if model in MODEL_ORDER else len(MODEL_ORDER)


def _number(value: float | None) -> str:
    """``79.30``; ``not trained`` for a shipped model's missing uniform twin."""
    return "not trained" if value is None else f"{value:.2f}"


def _interval(value: dict | None, *, digits: int = 3) -> str:
    """``0.123 [0.101, 0.145]``; ``–`` when there is nothing to show."""
    if not value or value.get("mean") is None:
        return "–"
    return f"{value['mean']:.{digits}f} [{value['low']:.{digits}f}, {value['high']:.{digits}f}]"
