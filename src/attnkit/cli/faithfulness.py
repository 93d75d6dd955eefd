"""``attnkit faithfulness``: does the attention explain the prediction? For each text, every attribution method's
scores over the tokens the model read and what erasing them does — comprehensiveness and sufficiency at the top
1/5/10/20/50 %, their AOPC, the fraction erased before the decision flips — against a seeded random floor, and
Kendall τ between the methods. A table per text, or one JSON object per text with ``--json``."""

from __future__ import annotations

import argparse

from attnkit.explain.faithfulness.erasure import ERASURES
from attnkit.explain.faithfulness.methods import METHODS, STEPS, parse_methods
from attnkit.tasks import registered_tasks, task_for_checkpoint
from attnkit.tasks.options import add_runtime_options, positive_int

EXAMPLES = """examples:
  attnkit faithfulness --checkpoint runs/ff --text "Stale and overpriced, never again."
  attnkit faithfulness --checkpoint runs/ff --file reviews.txt --json > faithfulness.jsonl
  attnkit faithfulness --checkpoint runs/ff --text "Lovely tea." --erase mask --methods attention,leave_one_out,random
  attnkit faithfulness --checkpoint digits --index 0 --index 7 --json
                            over the grid cells of a vision model (also deletion / insertion AUC per method)
  attnkit faithfulness --hf-model ./my-bert-sst2 --text "A gripping, funny film." --report report.html
                            any local AutoModelForSequenceClassification directory (save_pretrained; never downloads)

Read each method against random: an explanation whose top tokens, erased, lower p(label) no more than random
tokens do (comprehensiveness), is not the reason for the prediction.
"""


def _methods(text: str) -> list[str]:
    try:
        return parse_methods(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``faithfulness``."""
    kinds = ", ".join(task.kind for task in registered_tasks() if task.faithfulness is not None)
    parser = sub.add_parser(
        "faithfulness",
        help="test whether a model's attention explains its predictions",
        description="Erasure tests of attention and other explanations, one prediction at a time (ERASER's "
        "comprehensiveness, sufficiency and AOPC; Serrano & Smith's flip fraction; Kendall tau between methods). "
        f"Checkpoint kinds: {kinds}.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--checkpoint", help="a run directory (meaning its best/) or a checkpoint")
    model.add_argument(
        "--hf-model",
        metavar="DIR",
        help="a Hugging Face sequence classifier saved in a local directory (save_pretrained, with its tokenizer); "
        "needs pip install 'attnkit[hf]'; nothing is downloaded",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to test (repeatable)")
    source.add_argument("--file", help="one text per line (a vision checkpoint: an image file, .npy or PNG)")
    parser.add_argument(
        "--index", type=int, action="append", help="a vision checkpoint's test image by index (repeatable)"
    )
    parser.add_argument(
        "--erase",
        choices=ERASURES,
        default="delete",
        help="how a token is erased: delete it from the sequence (default; lengths shrink, an RNN never reads it), "
        "mask it out of every attention (it stays in the sequence), or replace it by [UNK]",
    )
    parser.add_argument(
        "--methods",
        type=_methods,
        default=list(METHODS),
        metavar="A,B,...",
        help=f"comma-separated, from {', '.join(METHODS)} (default: all; rollout and flow only where a "
        "Transformer encoder mixes the tokens)",
    )
    parser.add_argument(
        "--steps", type=positive_int, default=STEPS, help=f"integrated gradients' steps (default {STEPS})"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per text")
    parser.add_argument(
        "--report",
        metavar="HTML",
        default=None,
        help="with --hf-model: also write an offline HTML report (attention per head, rollout, the faithfulness "
        "panel); for attnkit checkpoints use attnkit explain --faithfulness",
    )
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit faithfulness``: the checkpoint's task runs the tests (a Hugging Face model: its own
    handler)."""
    if args.hf_model is not None:
        from attnkit.cli.faithfulness_hf import run_hf

        return run_hf(args)
    if args.report is not None:
        raise ValueError("--report is for --hf-model; for a checkpoint use attnkit explain --faithfulness")
    task, checkpoint = task_for_checkpoint(args.checkpoint)
    if args.index and task.kind != "vision":
        raise ValueError(f"--index picks test images of a vision checkpoint; {checkpoint} is {task.kind}: use --text")
    if task.faithfulness is None:
        raise ValueError(f"{checkpoint}: attnkit faithfulness does not support {task.kind} checkpoints yet")
    return task.faithfulness(args, checkpoint)
