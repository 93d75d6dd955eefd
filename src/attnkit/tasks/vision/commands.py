"""The visual-attention classifier's command hooks: ``attnkit train vision`` and what ``evaluate`` / ``predict`` /
``explain`` do with a ``vision`` checkpoint (layer 5; torch is imported only when a hook runs)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from attnkit.tasks.options import add_runtime_options, add_training_options, say

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


DESCRIPTION = (
    "Train a visual-attention classifier: a small CNN maps each image to a grid of features, attention pooling "
    "(with 2-D positions) weighs the cells, a linear layer classifies. Validation is carved from the training split; "
    "the fixed test split is scored once at the end."
)


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``attnkit train vision``."""
    parser.add_argument("--data", choices=["digits"], required=True, help="a built-in data set name (digits)")
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


def train(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train vision``."""
    from attnkit.tasks.run.plan import train_writes
    from attnkit.tasks.train_setup import start_training
    from attnkit.tasks.vision.config import KIND, VisionConfig, config_from_args
    from attnkit.tasks.vision.data import load_data
    from attnkit.tasks.vision.training import train_vision

    start = start_training(
        args,
        command="train vision",
        kind=KIND,
        inputs={"data": (args.data, ("digits",))},
        writes=train_writes(args),
        config_from_args=config_from_args,
        config_from_init=lambda init: VisionConfig.from_dict(init.config),
        fit_overrides={"select_metric": args.select, "select_mode": "min" if args.select == "loss" else "max"},
    )
    data = load_data(args.data, limit=args.limit)
    options = {"out_dir": args.out, "batch_size": args.batch_size, "resume": args.resume, "device": args.device}
    options |= {"valid_fraction": args.valid_fraction, "max_shift": args.shift, "init_from": start.init}
    with start.plan.writing():
        report = train_vision(data, start.config, start.fit_config, **options)
    best, test = report.fit.best_metrics, report.test_metrics
    say(f"best epoch {report.fit.best_epoch}: valid accuracy {best['accuracy']:.2f}%")
    say(f"test accuracy {test['accuracy']:.2f}% on {int(test['count'])} images")
    say(f"trained in {report.train_seconds / 60:.1f} min; checkpoint: {report.checkpoint}")
    return 0


def load(checkpoint: Path, *, device: str = "auto", precision: str = "fp32"):
    """The ready model of a vision checkpoint (:class:`~attnkit.tasks.vision.inference.VisionModel`)."""
    from attnkit.tasks.vision.inference import load_vision

    return load_vision(checkpoint, device=device, precision=precision)


def evaluate(args: argparse.Namespace, checkpoints: Sequence[Path]) -> int:
    """``attnkit evaluate`` for a vision checkpoint: accuracy on its built-in data set's test split."""
    from attnkit.data.images import load_data_set

    (checkpoint,) = checkpoints
    vision = load(checkpoint, device=args.device, precision=args.precision)
    name = args.data or vision.config.dataset
    data = load_data_set(name)
    metrics = vision.evaluate(data.test_images, data.test_labels, batch_size=args.batch_size)
    if getattr(args, "json", False):
        record = {"data": name, "accuracy": round(metrics["accuracy"], 2), "count": metrics["count"]}
        print(json.dumps(record, ensure_ascii=False))
        return 0
    say(f"accuracy {metrics['accuracy']:.2f}% on {int(metrics['count'])} {name} test images")
    return 0


def add_image_arguments(parser: argparse.ArgumentParser) -> None:
    """``--index`` of ``predict``, ``explain`` and ``faithfulness`` (vision checkpoints' test images)."""
    parser.add_argument_group("vision").add_argument(
        "--index", type=int, action="append", help="vision: a test image's index (repeatable)"
    )


def _images(args: argparse.Namespace, vision) -> tuple:
    """``(images [N, C, H, W], titles, true labels or None)`` from ``--file`` or ``--index``."""
    from attnkit.data.images import read_image_file
    from attnkit.tasks.vision.data import load_test_images

    if getattr(args, "text", None):
        raise ValueError("--text is for text classifiers; explain a vision checkpoint with --index N or --file F")
    config = vision.config
    if args.file:
        images = read_image_file(args.file, config.image_shape)
        titles = [f"{Path(args.file).name}, image {number}" for number in range(1, len(images) + 1)]
        return images, titles, [None] * len(images)
    if args.index:
        images, gold = load_test_images(config, args.index)
        return images, [f"{config.dataset} test image {index}" for index in args.index], list(gold)
    raise ValueError("a vision checkpoint explains test images (--index N, repeatable) or an image file (--file F)")


def predict(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit predict``: a label per image (tab-separated with its probability and the image's name)."""
    vision = load(checkpoint, device=args.device, precision=args.precision)
    images, titles, _ = _images(args, vision)
    for prediction, title in zip(vision.predict(images), titles, strict=True):
        confidence = prediction.probabilities[prediction.label]
        if args.json:
            record = {"image": title, "label": prediction.label, "probabilities": prediction.probabilities}
            print(json.dumps(record | {"attention": prediction.attention.tolist()}, ensure_ascii=False))
        else:
            print(f"{prediction.label}\t{confidence:.3f}\t{title}")
    return 0


def explain(args: argparse.Namespace, checkpoint: Path) -> Path:
    """``attnkit explain``: each image with every head's attention map laid over it."""
    from attnkit.tasks.vision.explain import vision_report

    if getattr(args, "faithfulness", False):
        raise ValueError("--faithfulness: the vision report has no faithfulness panel yet; run attnkit faithfulness")
    vision = load(checkpoint, device=args.device, precision=args.precision)
    images, titles, true_labels = _images(args, vision)
    return vision_report(vision, images, titles, true_labels, args.out, title=args.title)


def faithfulness(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit faithfulness``: the tests over each image's grid cells (``--index N`` or ``--file F``)."""
    from attnkit.tasks.vision.faithfulness import faithfulness_command

    if getattr(args, "text", None):
        raise ValueError("--text is for text checkpoints; test a vision checkpoint with --index N or --file F")
    vision = load(checkpoint, device=args.device, precision=args.precision)
    images, titles, _ = _images(args, vision)
    return faithfulness_command(args, vision, images, titles)
