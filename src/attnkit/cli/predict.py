"""``attnkit predict``: labels (and what the model attended to) for a text, a file, or standard input."""

from __future__ import annotations

import argparse
import json
import sys

from attnkit.cli.common import add_runtime_options, apply_runtime


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``predict``."""
    parser = sub.add_parser(
        "predict",
        help="predict labels for texts",
        description="Predict with a trained classifier. Texts come from --text, --file (one per line) or stdin.",
        epilog='examples:\n  attnkit predict --checkpoint runs/ff/best --text "Stale and overpriced."\n'
        "  attnkit predict --checkpoint runs/ff/best --file reviews.txt --json\n"
        "  cat reviews.txt | attnkit predict --checkpoint runs/ff/best",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--checkpoint", required=True)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--text", action="append", help="a text to classify (repeatable)")
    source.add_argument("--file", help="a file with one text per line")
    parser.add_argument("--json", action="store_true", help="one JSON object per text, with attention weights")
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def read_texts(args: argparse.Namespace) -> list[str]:
    """Texts from --text, --file or stdin (blank lines skipped)."""
    if args.text:
        return args.text
    if args.file:
        with open(args.file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    else:
        lines = sys.stdin.read().splitlines()
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise ValueError("no text given: use --text, --file or standard input")
    return texts


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit predict``."""
    apply_runtime(args)
    from attnkit.training.classification import predict_texts
    from attnkit.training.classifier_run import load_classifier

    model, encoder = load_classifier(args.checkpoint)
    for prediction in predict_texts(model, encoder, read_texts(args)):
        if args.json:
            print(json.dumps({k: v for k, v in vars(prediction).items() if v is not None}))
        else:
            confidence = prediction.probabilities[prediction.label]
            print(f"{prediction.label}\t{confidence:.3f}\t{prediction.text[:80]}")
    return 0
