"""The two cards of a shipped model: ``card.json`` (machine-readable) and ``MODEL_CARD.md`` (for people).

:func:`make_card` gathers the facts, :func:`render_model_card` writes them out as Markdown; both are called by
:mod:`scripts.ship_model`, which measures the figure first.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOWER_IS_BETTER", "TASK_NAMES", "faithfulness_lines", "improves", "render_model_card"]

# metrics where a smaller value is the better model (as `attnkit evaluate --json` names them)
LOWER_IS_BETTER = frozenset({"wer", "per", "cer", "loss"})
# what each checkpoint kind does, for the card's "Task" line
TASK_NAMES = {
    "classifier": "document classification (`attnkit predict`, `attnkit explain`)",
    "vision": "image classification with attention over a feature grid (`attnkit predict`, `attnkit explain`)",
    "seq2seq": "sequence to sequence (`attnkit translate`)",
}


def improves(metric: str, new: float, old: float) -> bool:
    """Whether ``new`` is a better figure than ``old`` for ``metric`` (lower for error rates and loss)."""
    return new < old if metric in LOWER_IS_BETTER else new > old


def render_model_card(card: dict[str, Any], *, config: dict[str, Any], metadata: dict[str, Any]) -> str:
    """``MODEL_CARD.md`` of a shipped model: ``card`` (card.json's content), its checkpoint's ``config`` (kind and
    model options) and ``metadata`` (the ``"attnkit"`` section of config.json: versions, epoch, validation)."""
    options = {key: value for key, value in config.items() if key not in ("kind", "label_names")}
    inner = metadata.get("metadata", {})
    valid = inner.get("metrics") or {}
    valid_text = ", ".join(f"{key} {value:.4g}" for key, value in valid.items() if isinstance(value, float))
    storage = "float16 (the published figure is the float16 file's)" if card.get("float16") else "float32"
    lines = [
        f"# {card['name']}",
        "",
        f"**Task:** {TASK_NAMES.get(card['kind'], card['kind'])}; checkpoint kind `{card['kind']}`.",
        "",
        f"**Data and split:** {card['data_note']}",
        "",
        "**Trained with:**",
        "",
        "```",
        card["command"],
        "```",
        "",
        f"Training minutes, all continuations added up: **{card['training_minutes']:.1f}**"
        + (f" ({card['minutes_note']})" if card.get("minutes_note") else "")
        + f". Best epoch {inner.get('best_epoch', inner.get('epoch', '?'))}"
        + (f" (validation: {valid_text})" if valid_text else "")
        + f"; attnkit {metadata.get('version', '?')}, torch {metadata.get('torch', '?')}.",
        "",
        "## Test figures",
        "",
        "| split | metric | value | measured |",
        "|---|---|---|---|",
        f"| {card['split']} | {card['metric']} | **{card['value']}** | {card['measured']} |",
        "",
        "Re-check it (the test `tests/pretrained/test_shipped_figures.py` does, on every `make test`):",
        "",
        "```",
        card["evaluate"],
        "```",
        "",
        *faithfulness_lines(card),
        "## The checkpoint",
        "",
        f"{card['size_bytes']:,} bytes (weights stored in {storage}), {card.get('parameters', 0):,} parameters. "
        "Files as a run's `best/` holds them: `model.safetensors`, `config.json`"
        + "".join(f", `{name}`" for name in metadata.get("files", []))
        + ". Model options:",
        "",
        "```",
        ", ".join(f"{key}={value}" for key, value in options.items()),
        "```",
        "",
        "Use it: `attnkit.load(" + repr(card["name"]) + ")`, or `--checkpoint " + card["name"] + "` in any command; "
        f"continue training from it with `attnkit train ... --init-from {card['name']}`.",
        "",
        "## Known limits",
        "",
        card["limits"],
        "",
    ]
    return "\n".join(lines)


def faithfulness_lines(card: dict[str, Any]) -> list[str]:
    """The card's "Faithfulness" section (its ``faithfulness`` block, see
    :mod:`attnkit.experiments.faithfulness.card`), or no lines when it has none."""
    block = card.get("faithfulness")
    if not block:
        return []
    sample = block["sample"]
    rows = [
        f"| {name} | {figures['aopc_comprehensiveness']:.3f} | {figures['flip_fraction']:.3f} |"
        for name, figures in block["methods"].items()
    ]
    share = block.get("attention_share_of_ig")
    lines = [
        "## Faithfulness",
        "",
        f"Does the attention explain the prediction? On {block['documents_measured']} test documents (listed in "
        f"`card.json`; drawn with seed {sample['seed']} among the test documents of at most {sample['max_words']} "
        f"words), erasure `{block['erase']}` (words removed), integrated gradients from "
        f"{block['integrated_gradients_steps']} steps, on one CPU thread: mean AOPC comprehensiveness (how much erasing the method's top words lowers the prediction; higher "
        "is more faithful) and flip fraction (share of the words erased, in the method's order, when the decision "
        "first changes; lower is more faithful).",
        "",
        "| method | AOPC comprehensiveness | flip fraction |",
        "|---|---|---|",
        *rows,
        "",
    ]
    if share is not None:
        lines.append(f"Attention's comprehensiveness is {share:.0%} of integrated gradients'.")
    if "contribution_share_of_ig" in block:
        lines.append(
            "Attention times each word's own part of the logit (`attention_contribution`): "
            f"{block['contribution_share_of_ig']:.0%} of integrated gradients' comprehensiveness."
        )
    uniform = block.get("uniform")
    if uniform:
        gap = uniform["difference"]
        lines.append(
            f"Uniform attention: learned − uniform test accuracy {gap['mean']:+.2f} points "
            f"[{gap['low']:+.2f}, {gap['high']:+.2f}] ({uniform['accuracy']:.2f} against "
            f"{uniform['uniform_accuracy']:.2f}), from {uniform['source']}; it needs a training run, so no test "
            "re-computes it."
        )
    lines += ["", "`tests/pretrained/test_shipped_faithfulness.py` re-computes the table from the shipped weights.", ""]
    return lines
