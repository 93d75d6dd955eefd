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
from attnkit.tasks.classify.recipe import add_recipe_arguments
from attnkit.tasks.options import (
    DELIMITER_HELP,
    add_runtime_options,
    add_training_options,
    delimiter_option,
    non_negative_float,
    non_negative_int,
    positive_int,
    read_texts,
    say,
    valid_fraction,
)
from attnkit.tasks.train_setup import add_scan_option

if TYPE_CHECKING:
    from attnkit.data.classification import TextClassificationData

DESCRIPTION = "Train a document classifier (HAN or pooled); validation is carved from the training split."
EXAMPLES = """examples:
  attnkit train classify --data fine-foods --model han --out runs/ff
  attnkit train classify --data 20ng --model pooled --encoder none --pooling attention --epochs 20 --out runs/20ng
  attnkit train classify --data my.csv --test my_test.csv --text-column body --label-column topic --out runs/mine
  attnkit train classify --data fine-foods --out runs/ff --resume        continue after an interruption
  attnkit train classify --data r8 --attention-distribution sparsemax --task-scaling lin --out runs/r8-tasc
  attnkit train classify --data big.jsonl --model pooled --max-minutes 60 --out runs/big   streamed (over 64 MB)
  torchrun --nproc-per-node 2 -m attnkit.cli train classify --data r8 --out runs/r8   two processes (DDP)
"""


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``attnkit train classify``, one small function per group (a new option is one line there)."""
    _add_data_arguments(parser.add_argument_group("data"))
    model = parser.add_argument_group("model")
    _add_attention_arguments(model)
    add_recipe_arguments(parser)
    _add_network_arguments(model)
    _add_fit_arguments(add_training_options(parser, epochs=10, batch_size=32, lr=2e-3))
    add_runtime_options(parser)


def _add_data_arguments(data: argparse._ArgumentGroup) -> None:
    """What is read: the data set, its columns and how it streams."""
    data.add_argument(
        "--data",
        required=True,
        help="a built-in data set name (20ng, r8, r52, fine-foods, bbc) or a CSV/TSV/JSONL file of labelled texts",
    )
    data.add_argument("--test", default=None, help="a test file, for --data FILE")
    data.add_argument("--text-column", default="text", help="column/key holding the text (default: text)")
    data.add_argument(
        "--label-column",
        default="label",
        help="column/key holding the label (default: label). A label is text; in JSONL a whole number stands for "
        'its digits (1, 1.0 and "1" are one label) and 1.5, true or null are refused',
    )
    data.add_argument(
        "--limit", type=positive_int, default=None, help="read only the first N rows of --data FILE (smoke runs)"
    )
    data.add_argument(
        "--streaming",
        choices=["auto", "always", "never"],
        default="auto",
        help="read --data FILE as a stream, with memory bounded whatever its size (one pass for the vocabulary, "
        "cached; the first epoch keeps the token ids, later epochs read them), or in memory: auto streams files "
        "over 64 MB (default auto)",
    )
    data.add_argument(
        "--skip-bad-rows",
        action="store_true",
        help="skip and count bad rows of a streamed file instead of stopping at the first (file:line)",
    )
    add_scan_option(data, "the vocabulary, the labels, their counts and the validation rows; the other rows are "
                    "counted by their lines, not read before the first step (a bad row or a new label there "
                    "stops the first epoch with one error)")  # fmt: skip
    data.add_argument("--delimiter", type=delimiter_option, default=None, help=DELIMITER_HELP)


def _add_attention_arguments(model: argparse._ArgumentGroup) -> None:
    """The model family and what its attention may weigh."""
    model.add_argument("--model", choices=["han", "pooled"], default="han", help="default: han")
    model.add_argument("--encoder", choices=["none", "bigru", "transformer"], default="bigru", help="pooled only")
    model.add_argument(
        "--pooling", choices=["attention", "multihead", "mean", "max"], default="attention", help="pooled only"
    )
    model.add_argument(
        "--attention-padding",
        choices=["masked", "unmasked", "renormalised"],
        default="masked",
        help="attention pooling (HAN and pooled): mask padding (default), score it like tokens, or renormalise "
        "after softmax",
    )
    model.add_argument(
        "--attend",
        choices=["all", "content"],
        default="all",
        help="what the word attention may attend to: every token (default), or content words only: not stop words "
        "(scikit-learn's English list without its negations and other sentiment-bearing function words: not, no, "
        "never, nor, without, but, ... stay attendable) or punctuation; the encoders still read every token",
    )
    model.add_argument(
        "--uniform-attention",
        action="store_true",
        help="every attention pooling weighs the real tokens equally (Wiegreffe & Pinter's baseline: if this "
        "model is as accurate, the learned attention was not needed; see attnkit.explain.faithfulness.baselines)",
    )


def _add_network_arguments(model: argparse._ArgumentGroup) -> None:
    """The encoder, the embeddings and the tokens kept per document."""
    model.add_argument(
        "--unpacked-rnn",
        action="store_true",
        help="run the BiGRUs over the padded batch instead of packed sequences, so padding feeds the recurrence "
        "(the masking experiment's setting; default: packed)",
    )
    model.add_argument(
        "--heads", type=positive_int, default=4, help="multihead pooling / transformer heads (default 4)"
    )
    model.add_argument(
        "--embed-dim", type=positive_int, default=None, help="embedding size (default 128; 50 with --embeddings glove)"
    )
    model.add_argument(
        "--embeddings",
        default="random",
        metavar="random|word2vec|fasttext|glove|PATH",
        help="start the embeddings from word vectors: word2vec/fasttext trained with gensim on the training split "
        "(cached), GloVe 6B 50d, or a word2vec text/binary file; tokens without a vector start random (default random)",
    )
    model.add_argument(
        "--freeze-embeddings", action="store_true", help="keep the pre-trained vectors fixed during training"
    )
    model.add_argument(
        "--bigram-buckets",
        type=non_negative_int,
        default=0,
        help="pooled: add hashed word-bigram embeddings with this many buckets, fastText-style (default 0: off)",
    )
    model.add_argument("--hidden", type=positive_int, default=64, help="GRU hidden size per direction (default 64)")
    model.add_argument("--dropout", type=float, default=0.3)
    model.add_argument("--tokenizer", choices=["word", "wordpiece", "bpe"], default="word")
    model.add_argument("--vocab-size", type=positive_int, default=30000)
    model.add_argument("--max-tokens", type=positive_int, default=800, help="pooled: tokens kept per document")
    model.add_argument("--max-sentences", type=positive_int, default=30, help="HAN: sentences kept per document")
    model.add_argument("--max-words", type=positive_int, default=50, help="HAN: words kept per sentence")


def _add_fit_arguments(fit: argparse._ArgumentGroup) -> None:
    """The classifier's training options beside the shared ones (validation split, loss, batches)."""
    fit.add_argument(
        "--valid-fraction",
        type=valid_fraction,
        default=0.1,
        help="validation share of train (default 0.1); 0 trains on all of it without validation and keeps the last "
        "epoch (or the average of --average-last): a recipe already chosen on validation, refitted on every "
        "document; needs --schedule cosine or inverse-sqrt",
    )
    fit.add_argument(
        "--valid-seed",
        type=non_negative_int,
        default=None,
        help="seed of the validation split carved from train (default: --seed); give the members of a seed "
        "ensemble one --valid-seed so that they share a validation split the ensemble can be scored on",
    )
    fit.add_argument(
        "--label-smoothing", type=non_negative_float, default=0.0, help="of the training loss (default 0: none)"
    )
    fit.add_argument("--random-batches", action="store_true", help="random instead of length-bucketed batches")


def train(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train classify``."""
    from attnkit.data.classification import data_set_names
    from attnkit.tasks.classify.config import KIND, ClassifierConfig, config_from_args
    from attnkit.tasks.classify.streamed_command import streams, train_streamed
    from attnkit.tasks.classify.training import TOKENIZER_DIR, train_classifier
    from attnkit.tasks.run.plan import train_writes
    from attnkit.tasks.train_setup import start_training

    if args.valid_fraction == 0:  # refused before anything is read or written, as fit itself would refuse it
        from attnkit.training.fit_config import check_schedule_without_validation

        check_schedule_without_validation(args.schedule, who="--valid-fraction 0")
    embeddings_file = args.embeddings if check_source_is_file(args.embeddings) else None
    start = start_training(
        args,
        command="train classify",
        kind=KIND,
        inputs={
            "data": (args.data, data_set_names()),
            "test": (args.test, ()),
            "embeddings": (embeddings_file, ()),
        },
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
    with start.plan.writing():
        report = train_classifier(
            data,
            config,
            start.fit_config,
            valid_fraction=args.valid_fraction,
            valid_seed=args.valid_seed,
            init_from=start.init,
            load_seconds=load_seconds,
            **options,
        )
    _summarise(report)
    return 0


def _read_in_memory(args: argparse.Namespace, *, max_chars: int) -> tuple[TextClassificationData, float]:
    """The labelled texts of ``--data`` (the first ``--limit`` training rows), said with their summary, and the
    seconds reading took."""
    from attnkit.tasks.classify.data import load_data

    started = time.monotonic()
    data = load_data(
        args.data,
        test_path=args.test,
        text_column=args.text_column,
        label_column=args.label_column,
        delimiter=args.delimiter,
        max_chars=max_chars,
    )
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
    return {
        "out_dir": args.out,
        "batch_size": args.batch_size,
        "resume": args.resume,
        "bucketed": not args.random_batches,
        "device": args.device,
    }


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
    """How many characters of a document the classifier can use at most, generously: a token is rarely longer
    than 64 characters, so a document is cut there when it is read (a 50 MB field would only exhaust memory in
    the tokeniser, and its end is never read)."""
    return 64 * max(config.max_tokens, config.max_sentences * config.max_words)  # whichever family reads more


def load(checkpoint: Path, *, device: str = "auto", precision: str = "fp32"):
    """The ready model of a classifier checkpoint (:class:`~attnkit.tasks.classify.inference.Classifier`) on
    ``device``, running in ``precision``."""
    from attnkit.tasks.classify.inference import load_classifier

    return load_classifier(checkpoint, device=device, precision=precision)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Classifier options of ``attnkit evaluate``."""
    group = parser.add_argument_group("classifiers")
    group.add_argument("--text-column", default=None, help="column/key of the text (default: the training file's)")
    group.add_argument("--label-column", default=None, help="column/key of the label (default: the training file's)")


def evaluate(args: argparse.Namespace, checkpoints: Sequence[Path]) -> int:
    """``attnkit evaluate`` for classifiers: accuracy, per-class precision/recall/F1 and the confusion matrix on
    a built-in test split or every row of a file (read with the first checkpoint's columns unless told otherwise).
    Several checkpoints are scored as one ensemble, their class probabilities averaged
    (:class:`~attnkit.tasks.classify.ensemble.ClassifierEnsemble`)."""
    from attnkit.data.classification import data_set_names
    from attnkit.tasks.classify.data import load_data
    from attnkit.tasks.classify.ensemble import ClassifierEnsemble
    from attnkit.tasks.classify.report import format_report

    if args.data is None:
        raise ValueError("a classifier checkpoint needs --data (a built-in data set name or a file of labelled texts)")
    members = [load(checkpoint, device=args.device, precision=args.precision) for checkpoint in checkpoints]
    classifier = members[0]
    scorer = classifier if len(members) == 1 else ClassifierEnsemble(members)
    text_column = args.text_column or classifier.config.text_column
    label_column = args.label_column or classifier.config.label_column
    delimiter = getattr(args, "delimiter", None)
    data = load_data(
        args.data,
        text_column=text_column,
        label_column=label_column,
        min_labels=1,
        delimiter=delimiter,
        max_chars=max(document_chars(member.config) for member in members),
    )
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
    shading = getattr(args, "word_shading", "document")
    return classifier_report(
        predictions,
        classifier.label_names,
        args.out,
        title=title,
        faithfulness=tests,
        word_shading=shading,
        recipe=classifier.config.recipe(),
    )


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
