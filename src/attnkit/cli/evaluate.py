"""``attnkit evaluate``: accuracy of a checkpoint on a dataset's test split or a labelled file."""

from __future__ import annotations

import argparse

from attnkit.cli.common import add_data_options, add_runtime_options, apply_runtime


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``evaluate``."""
    parser = sub.add_parser(
        "evaluate",
        help="evaluate a checkpoint",
        description="Evaluate a trained classifier on a built-in dataset's test split or on a labelled file.",
        epilog="examples:\n  attnkit evaluate --checkpoint runs/ff/best --data fine-foods\n"
        "  attnkit evaluate --checkpoint runs/mine/best --data held_out.csv --label-column topic",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--checkpoint", required=True, help="a checkpoint directory (e.g. runs/ff/best)")
    add_data_options(parser)
    parser.add_argument("--batch-size", type=int, default=64)
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit evaluate``."""
    apply_runtime(args)
    from attnkit.data.classification import builtin_names
    from attnkit.training.classifier_run import evaluate_classifier, load_classifier, load_data

    model, encoder = load_classifier(args.checkpoint)
    data = load_data(args.data, text_column=args.text_column, label_column=args.label_column)
    if args.data in builtin_names():
        texts, labels, names = data.test_texts, data.test_labels, data.label_names
    else:  # a user file: every row is evaluated
        texts, labels, names = data.train_texts, data.train_labels, data.label_names
    index = {name: i for i, name in enumerate(encoder.config.label_names)}
    unknown = sorted(set(names) - set(index))
    if unknown:
        raise ValueError(f"{args.data}: labels {unknown[:5]} are not among the checkpoint's classes")
    labels = [index[names[label]] for label in labels]
    metrics = evaluate_classifier(model, encoder, texts, labels, batch_size=args.batch_size)
    print(
        f"accuracy {100 * metrics['accuracy']:.2f}% on {int(metrics['count'])} documents (loss {metrics['loss']:.4f})"
    )
    return 0
