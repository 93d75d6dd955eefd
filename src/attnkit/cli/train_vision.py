"""``attnkit train vision``: train a visual-attention classifier (CNN feature grid + 2-D attention pooling)."""

from __future__ import annotations

import argparse

from attnkit.cli.common import add_runtime_options, add_training_options, apply_runtime, fit_config_from_args

EXAMPLES = """examples:
  attnkit train vision --data digits --out runs/digits
  attnkit train vision --data digits --heads 1 --out runs/digits-1h               one attention map per image
  attnkit train vision --data digits --positions none --out runs/digits-nopos     pooling blind to cell positions
  attnkit train vision --data digits --out runs/digits --resume                   continue after an interruption
  attnkit explain --checkpoint runs/digits/best --index 0 --index 1 --out digits.html
"""


def _sizes(text: str) -> list[int]:
    """``"32,64,64"`` -> ``[32, 64, 64]``; ``""`` -> ``[]``."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from error


def add_task(tasks: argparse._SubParsersAction) -> None:
    """Add ``train vision``."""
    parser = tasks.add_parser(
        "vision",
        help="image classification with visual attention (built-in: digits)",
        description="Train a visual-attention classifier: a small CNN maps each image to a grid of features, "
        "attention pooling (with 2-D positions) weighs the cells, a linear layer classifies. Validation is carved "
        "from the training split; the fixed test split is scored once at the end.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--data", choices=["digits"], required=True, help="built-in image dataset")
    model = parser.add_argument_group("model")
    model.add_argument("--channels", type=_sizes, default=[32, 64, 64, 64], help="conv channels (default 32,64,64,64)")
    model.add_argument(
        "--downsample", type=_sizes, default=[], help="conv blocks followed by 2x2 max-pooling, e.g. 1 (default none)"
    )
    model.add_argument("--heads", type=int, default=4, help="attention heads = attention maps per image (default 4)")
    model.add_argument("--positions", choices=["sinusoidal-2d", "none"], default="sinusoidal-2d")
    model.add_argument("--dropout", type=float, default=0.1)
    fit = add_training_options(parser, epochs=40, batch_size=64, lr=5e-4, weight_decay=0.01, patience=None)
    fit.add_argument(
        "--select",
        choices=["loss", "accuracy"],
        default="loss",
        help="validation metric that picks the best epoch (default loss: accuracy saturates on a small split)",
    )
    fit.add_argument("--shift", type=int, default=1, help="augment: random translations up to N pixels (default 1)")
    fit.add_argument("--valid-fraction", type=float, default=0.1, help="validation share of train (default 0.1)")
    fit.add_argument("--limit", type=int, default=None, help="train on the first N training images (smoke runs)")
    add_runtime_options(parser)
    parser.set_defaults(handler=run_vision)


def run_vision(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train vision``."""
    apply_runtime(args)
    from attnkit.data.images import load_image_dataset
    from attnkit.training.vision import VisionConfig, train_vision

    data = load_image_dataset(args.data)
    if args.limit is not None:
        if args.limit < 20:
            raise ValueError(f"--limit must be at least 20 images, got {args.limit}")
        data = data.subset_train(args.limit)
    config = VisionConfig(
        channels=args.channels,
        downsample=args.downsample,
        heads=args.heads,
        positions=args.positions,
        dropout=args.dropout,
    )
    fit_config = fit_config_from_args(
        args, select_metric=args.select, select_mode="min" if args.select == "loss" else "max"
    )
    report = train_vision(
        data,
        config,
        fit_config,
        out_dir=args.out,
        batch_size=args.batch_size,
        valid_fraction=args.valid_fraction,
        max_shift=args.shift,
        resume=args.resume,
    )
    best, test = report.fit.best_metrics, report.test_metrics
    print(f"best epoch {report.fit.best_epoch}: valid accuracy {100 * best['accuracy']:.2f}%")
    print(f"test accuracy {100 * test['accuracy']:.2f}% on {int(test['count'])} images")
    print(f"trained in {report.train_seconds / 60:.1f} min; checkpoint: {report.checkpoint}")
    return 0
