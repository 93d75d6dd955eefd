"""The classifier's command hooks: ``attnkit train classify`` and what ``evaluate`` / ``predict`` / ``explain`` do
with a ``classifier`` checkpoint (layer 5; torch is imported only when a hook runs)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.tasks.classify.data import data_summary
from attnkit.tasks.classify.recipe import add_recipe_arguments, apply_recipe_defaults
from attnkit.tasks.classify.train_options import (
    add_attention_arguments,
    add_data_arguments,
    add_fit_arguments,
    add_network_arguments,
)
from attnkit.tasks.options import add_runtime_options, add_training_options, read_texts, say

if TYPE_CHECKING:
    from attnkit.data.classification import TextClassificationData

DESCRIPTION = "Train a document classifier (HAN or pooled); validation is carved from the training split."
EXAMPLES = """examples:
  attnkit train classify --data fine-foods --model han --out runs/ff
  attnkit train classify --data 20ng --model pooled --encoder none --pooling attention --epochs 20 --out runs/20ng
  attnkit train classify --data my.csv --test my_test.csv --text-column body --label-column topic --out runs/mine
  attnkit train classify --data fine-foods --out runs/ff --resume        continue after an interruption
  attnkit train classify --data r8 --attention-distribution sparsemax --task-scaling lin --out runs/r8-tasc
  attnkit train classify --data r8 --attention-values states --out runs/r8-states   attention over the states
  attnkit train classify --data big.jsonl --model pooled --max-minutes 60 --out runs/big   streamed (over 64 MB)
  torchrun --nproc-per-node 2 -m attnkit.cli train classify --data r8 --out runs/r8   two processes (DDP)
"""


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``attnkit train classify`` (one function per group in :mod:`~attnkit.tasks.classify.train_options`)."""
    data = parser.add_argument_group("data")
    add_data_arguments(data)
    model = parser.add_argument_group("model")
    add_attention_arguments(model)
    add_recipe_arguments(parser)
    add_network_arguments(model)
    add_fit_arguments(add_training_options(parser, epochs=10, batch_size=32, lr=2e-3))
    add_runtime_options(parser)


def train(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train classify``."""
    from attnkit.data.classification import data_set_names
    from attnkit.tasks.classify.config import KIND, ClassifierConfig, config_from_args
    from attnkit.tasks.classify.streamed_command import streams, train_streamed
    from attnkit.tasks.classify.training import TOKENIZER_DIR, train_classifier
    from attnkit.tasks.run.plan import train_writes
    from attnkit.tasks.train_setup import start_training

    apply_recipe_defaults(args)
    if args.valid_fraction == 0:  # refused before anything is read or written, as fit itself would refuse it
        from attnkit.training.fit_config import check_schedule_without_validation

        check_schedule_without_validation(args.schedule, who="--valid-fraction 0")
    embeddings_file = args.embeddings if check_source_is_file(args.embeddings) else None
    start = start_training(
        args,
        command="train classify",
        kind=KIND,
        inputs={"data": (args.data, data_set_names()), "test": (args.test, ()), "embeddings": (embeddings_file, ())},
        writes=train_writes(args, TOKENIZER_DIR),
        config_from_args=config_from_args,
        config_from_init=lambda init: ClassifierConfig.from_dict(init.config),
        streams=streams,
    )
    config, options = start.config, trainer_options(args)
    if start.streamed:
        _summarise(train_streamed(args, start, options, max_chars=document_chars(config)))
        return 0
    data, load_seconds = _read_in_memory(args, max_chars=document_chars(config))
    if args.label_smoothing:
        say(f"label smoothing {args.label_smoothing:g}: the training loss reads higher than the validation loss")
    in_memory = {"valid_fraction": args.valid_fraction, "valid_seed": args.valid_seed, "load_seconds": load_seconds}
    with start.plan.writing():
        report = train_classifier(data, config, start.fit_config, init_from=start.init, **in_memory, **options)
    _summarise(report)
    return 0


def _read_in_memory(args: argparse.Namespace, *, max_chars: int) -> tuple[TextClassificationData, float]:
    """The labelled texts of ``--data`` (the first ``--limit`` training rows), said, and the seconds reading took."""
    from attnkit.tasks.classify.data import load_data

    started = time.monotonic()
    columns = {"text_column": args.text_column, "label_column": args.label_column, "delimiter": args.delimiter}
    data = load_data(args.data, test_path=args.test, max_chars=max_chars, **columns)
    if args.limit is not None:  # the first N training rows
        data = dataclasses.replace(
            data, train_texts=data.train_texts[: args.limit], train_labels=data.train_labels[: args.limit]
        )
    load_seconds = time.monotonic() - started
    say(f"read {args.data} in {load_seconds:.1f} s")
    say(data_summary(args.data, data, args.valid_fraction))
    return data, load_seconds


def trainer_options(args: argparse.Namespace) -> dict:
    """What the in-memory and the streamed trainer both take from the arguments (run directory, batching, device)."""
    options = {"out_dir": args.out, "batch_size": args.batch_size, "resume": args.resume, "device": args.device}
    return {**options, "bucketed": not args.random_batches}


def _summarise(report) -> None:
    """Print the run's summary."""
    best = report.fit.best_metrics
    if best:
        say(f"best epoch {report.fit.best_epoch}: valid accuracy {best['accuracy']:.2f}%")
    else:
        say(f"no validation (--valid-fraction 0): kept epoch {report.fit.best_epoch}")
    if report.test_metrics is not None:
        test = report.test_metrics
        say(f"test accuracy {test['accuracy']:.2f}% on {int(test['count'])} documents")
    say(f"trained in {report.train_seconds / 60:.1f} min; checkpoint: {report.checkpoint}")


def check_source_is_file(source: str) -> bool:
    """Whether ``--embeddings`` names a file (refusing what is neither a known source nor a file)."""
    from attnkit.data.classify.embeddings import check_source

    return check_source(source) == "file"


def document_chars(config) -> int:
    """How many characters of a document the classifier can use at most, generously (64 per token): a document is
    cut there when it is read, since a huge field would only exhaust memory in the tokeniser."""
    return 64 * max(config.max_tokens, config.max_sentences * config.max_words)  # whichever family reads more


def load(checkpoint: Path, *, device: str = "auto", precision: str = "fp32"):
    """The ready model of a classifier checkpoint (:class:`~attnkit.tasks.classify.inference.Classifier`)."""
    from attnkit.tasks.classify.inference import load_classifier

    return load_classifier(checkpoint, device=device, precision=precision)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Classifier options of ``attnkit evaluate``."""
    group = parser.add_argument_group("classifiers")
    group.add_argument("--text-column", default=None, help="column/key of the text (default: the training file's)")
    group.add_argument("--label-column", default=None, help="column/key of the label (default: the training file's)")


def evaluate(args: argparse.Namespace, checkpoints: Sequence[Path]) -> int:
    """``attnkit evaluate`` for classifiers: accuracy, per-class precision/recall/F1 and the confusion matrix on
    a built-in test split or every row of a file; several checkpoints are scored as one ensemble."""
    from attnkit.data.classification import data_set_names
    from attnkit.tasks.classify.data import load_data
    from attnkit.tasks.classify.ensemble import ClassifierEnsemble
    from attnkit.tasks.classify.report import format_report

    if args.data is None:
        raise ValueError("a classifier checkpoint needs --data (a built-in data set name or a file of labelled texts)")
    members = [load(checkpoint, device=args.device, precision=args.precision) for checkpoint in checkpoints]
    classifier = members[0]
    scorer = classifier if len(members) == 1 else ClassifierEnsemble(members)
    columns = {
        "text_column": args.text_column or classifier.config.text_column,
        "label_column": args.label_column or classifier.config.label_column,
        "delimiter": getattr(args, "delimiter", None),
    }
    max_chars = max(document_chars(member.config) for member in members)
    data = load_data(args.data, min_labels=1, max_chars=max_chars, **columns)
    if args.data in data_set_names():
        texts, labels = data.test_texts, data.test_labels
    else:  # a user file: every row is evaluated
        texts, labels = data.train_texts, data.train_labels
    names = [data.label_names[label] for label in labels]
    try:
        scorer.label_ids(names)
    except ValueError as error:
        raise ValueError(f"{args.data}: {error}") from None
    report = scorer.evaluate(texts, names, batch_size=args.batch_size)  # what Python's evaluate returns
    shown = str(checkpoints[0]) if len(checkpoints) == 1 else [str(checkpoint) for checkpoint in checkpoints]
    if args.json:
        rounded = {"accuracy": round(report["accuracy"], 2), "loss": round(report["loss"], 4)}
        print(json.dumps({"data": args.data, "checkpoint": shown, **report, **rounded}, ensure_ascii=False))
        return 0
    ensemble = f" (an ensemble of {len(members)}, probabilities averaged)" if len(members) > 1 else ""
    print(f"accuracy {report['accuracy']:.2f}% on {report['count']} documents (loss {report['loss']:.4f}){ensemble}\n")
    print(format_report(report))
    return 0


def predict(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit predict``: a label per text (tab-separated with its probability and the text), or JSON; a blank
    input line gives a blank output line (``--json``: no object), so the output lines up with the input."""
    lines = read_texts(args, keep_blank=True)  # refuse empty input before loading anything
    classifier = load(checkpoint, device=args.device, precision=args.precision)
    predictions = iter(classifier.predict([line for line in lines if line.strip()]))
    for line in lines:
        if not line.strip():  # a blank input line: a blank output line (--json: none), as translate does
            if not args.json:
                print()
            continue
        prediction = next(predictions)
        if args.json:
            print(json.dumps({k: v for k, v in vars(prediction).items() if v is not None}, ensure_ascii=False))
        else:
            confidence = prediction.probabilities[prediction.label]
            print(f"{prediction.label}\t{confidence:.3f}\t{prediction.text}")
    return 0


def explain(args: argparse.Namespace, checkpoint: Path) -> Path:
    """``attnkit explain``: HAN documents with sentences and words shaded, or pooled tokens one row per head."""
    from attnkit.explain.faithfulness.methods import PANEL_STEPS
    from attnkit.tasks.classify.explain import classifier_report

    classifier = load(checkpoint, device=args.device, precision=args.precision)
    texts = read_texts(args)
    predictions = classifier.predict(texts)
    title = args.title or "What the classifier attended to"
    tests = None
    if getattr(args, "faithfulness", False):
        steps = getattr(args, "steps", PANEL_STEPS)
        tests = classifier.faithfulness(texts, erase=args.erase, seed=args.seed, steps=steps)
    options = {"word_shading": getattr(args, "word_shading", "document"), "recipe": classifier.config.recipe()}
    return classifier_report(predictions, classifier.label_names, args.out, title=title, faithfulness=tests, **options)


def faithfulness(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit faithfulness``: a table per text, or one JSON object per text."""
    from attnkit.explain.faithfulness.results import print_results

    texts = read_texts(args)  # before the model loads: a missing file is one line, nothing run
    classifier = load(checkpoint, device=args.device, precision=args.precision)
    results = classifier.faithfulness(texts, methods=args.methods, erase=args.erase, seed=args.seed, steps=args.steps)
    print_results(results, as_json=args.json)
    return 0


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    """Classifier options of ``attnkit explain``."""
    parser.add_argument(
        "--word-shading",
        choices=["document", "sentence"],
        default="document",
        help="HAN reports: shade each word by word x sentence weight across the document (default), or by its "
        "weight within its own sentence",
    )
