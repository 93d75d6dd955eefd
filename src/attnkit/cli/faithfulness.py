"""``attnkit faithfulness``: does the attention explain the prediction? For each text, every attribution method's
scores over the tokens the model read and what erasing them does — comprehensiveness and sufficiency at the top
1/5/10/20/50 %, their AOPC, the fraction erased before the decision flips — against a seeded random floor, and
Kendall τ between the methods. A table per text, or one JSON object per text with ``--json``. ``--hf-model DIR``: a Hugging Face sequence classifier saved in a local directory
(:mod:`attnkit.explain.faithfulness.huggingface`)."""

from __future__ import annotations

import argparse

from attnkit.explain.faithfulness.erasure import ERASURES, as_erasure
from attnkit.explain.faithfulness.methods import METHODS, STEPS, STEPS_CAP, TOLERANCE, as_methods
from attnkit.tasks import registered_tasks, task_for_checkpoint
from attnkit.tasks.options import add_runtime_options, add_task_arguments, positive_int, refuse_foreign_options

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


def _methods(text: str) -> list:
    """``--methods A,B``: the Method objects (the names are read here, once)."""
    try:
        return as_methods([name.strip() for name in text.split(",") if name.strip()])
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _erasure(text: str):
    """``--erase NAME``: the Erasure object (the name is read here, once)."""
    try:
        return as_erasure(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_erasure_options(parser: argparse._ActionsContainer, *, steps: int, prefix: str = "") -> None:
    """``--erase`` and ``--steps``, declared once for ``attnkit faithfulness`` and ``attnkit explain
    --faithfulness`` (``steps``: the command's default; ``prefix``: the help's opening words)."""
    erasures = "; ".join(f"{name}: {erasure.help}" for name, erasure in ERASURES.items())
    parser.add_argument(
        "--erase",
        type=_erasure,
        default=ERASURES["delete"],
        metavar="{" + ",".join(ERASURES) + "}",
        help=f"{prefix}how a token is erased ({erasures})",
    )
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=steps,
        help=f"{prefix}integrated gradients' first Gauss-Legendre nodes (default {steps}): they double until the "
        f"completeness delta is within {100 * TOLERANCE:g} %% of p's change (up to {STEPS_CAP}), else the figure says so",
    )


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
    add_erasure_options(parser, steps=STEPS)
    parser.add_argument(
        "--methods",
        type=_methods,
        default=list(METHODS.values()),
        metavar="A,B,...",
        help=f"comma-separated, from {', '.join(METHODS)} (default: all; rollout and flow only where a "
        "Transformer encoder mixes the tokens)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per text")
    parser.add_argument(
        "--report",
        metavar="HTML",
        default=None,
        help="with --hf-model: also write an offline HTML report (attention per head, rollout, the faithfulness "
        "panel); for attnkit checkpoints use attnkit explain --faithfulness",
    )
    add_task_arguments(parser, registered_tasks(), "add_faithfulness_arguments")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit faithfulness``: the checkpoint's task runs the tests (a Hugging Face model: its own
    handler)."""
    if args.hf_model is not None:
        return run_hf(args)
    if args.report is not None:
        raise ValueError("--report is for --hf-model; for a checkpoint use attnkit explain --faithfulness")
    task, checkpoint = task_for_checkpoint(args.checkpoint)
    refuse_foreign_options(args, task)
    if task.faithfulness is None:
        raise ValueError(f"{checkpoint}: attnkit faithfulness does not support {task.kind} checkpoints yet")
    return task.faithfulness(args, checkpoint)


def run_hf(args: argparse.Namespace) -> int:
    """Read the texts, load the model (never downloading), run the tests, print a table or JSON per text, and
    write the HTML report when ``--report`` is given."""
    from pathlib import Path

    from attnkit.tasks.options import read_texts

    texts = read_texts(args)  # before the model loads: a missing file is one line, nothing run
    if getattr(args, "precision", "fp32") != "fp32":
        raise ValueError("--precision: a Hugging Face model runs in float32 here (--precision fp32)")
    if args.report is not None and not Path(args.report).resolve().parent.is_dir():
        raise FileNotFoundError(f"--report {args.report}: its directory does not exist")
    from attnkit.explain.faithfulness import huggingface
    from attnkit.explain.faithfulness.results import print_results
    from attnkit.runtime.devices import resolve_device

    model, tokenizer = huggingface.load_local(args.hf_model)
    model.to(resolve_device(args.device))
    options = {"methods": args.methods, "erase": args.erase, "seed": args.seed, "steps": args.steps}
    if args.report is not None:
        from attnkit.explain.faithfulness.huggingface import write_hf_report

        _, results = write_hf_report(model, tokenizer, texts, args.report, **options)
    else:
        results = huggingface.faithfulness(model, tokenizer, texts, **options)
    print_results(results, as_json=args.json)
    return 0
