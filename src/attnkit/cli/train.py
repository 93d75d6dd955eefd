"""``attnkit train classify``: train a document classifier (HAN or pooled) on a built-in dataset or your files."""

from __future__ import annotations

import argparse

from attnkit.cli.common import (
    add_data_options,
    add_runtime_options,
    add_training_options,
    apply_runtime,
    fit_config_from_args,
    is_main_process,
)

EXAMPLES = """examples:
  attnkit train classify --data fine-foods --model han --out runs/ff
  attnkit train classify --data 20ng --model pooled --encoder none --pooling attention --epochs 20 --out runs/20ng
  attnkit train classify --data my.csv --test my_test.csv --text-column body --label-column topic --out runs/mine
  attnkit train classify --data fine-foods --out runs/ff --resume        continue after an interruption
  torchrun --nproc-per-node 2 -m attnkit.cli train classify --data r8 --out runs/r8   two processes (DDP)
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``train`` with one sub-command per task (see ``attnkit.cli.commands.TRAIN_TASKS``)."""
    from attnkit.cli.commands import TRAIN_TASKS

    train = sub.add_parser("train", help="train a model", description="Train a model.")
    tasks = train.add_subparsers(dest="task", metavar="TASK", required=True)
    for add_task in TRAIN_TASKS:
        add_task(tasks)


def add_classify(tasks: argparse._SubParsersAction) -> None:
    """Add ``train classify``."""
    classify = tasks.add_parser(
        "classify",
        help="document classification (HAN or pooled classifier)",
        description="Train a document classifier; validation is carved from the training split.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_options(classify)
    model = classify.add_argument_group("model")
    model.add_argument("--model", choices=["han", "pooled"], default="han", help="default: han")
    model.add_argument("--encoder", choices=["none", "bigru", "transformer"], default="bigru", help="pooled only")
    model.add_argument(
        "--pooling", choices=["attention", "multihead", "mean", "max"], default="attention", help="pooled only"
    )
    model.add_argument(
        "--attention-padding",
        choices=["masked", "unmasked", "renormalised"],
        default="masked",
        help="pooled attention: mask padding (default), score it like tokens, or renormalise after softmax",
    )
    model.add_argument("--heads", type=int, default=4, help="multihead pooling / transformer heads (default 4)")
    model.add_argument("--embed-dim", type=int, default=128)
    model.add_argument(
        "--bigram-buckets",
        type=int,
        default=0,
        help="pooled: add hashed word-bigram embeddings with this many buckets, fastText-style (default 0: off)",
    )
    model.add_argument("--hidden", type=int, default=64, help="GRU hidden size per direction (default 64)")
    model.add_argument("--dropout", type=float, default=0.3)
    model.add_argument("--tokenizer", choices=["word", "wordpiece", "bpe"], default="word")
    model.add_argument("--vocab-size", type=int, default=30000)
    model.add_argument("--max-tokens", type=int, default=800, help="pooled: tokens kept per document")
    model.add_argument("--max-sentences", type=int, default=30, help="HAN: sentences kept per document")
    model.add_argument("--max-words", type=int, default=50, help="HAN: words kept per sentence")
    fit = add_training_options(classify, epochs=10, batch_size=32, lr=2e-3)
    fit.add_argument("--valid-fraction", type=float, default=0.1, help="validation share of train (default 0.1)")
    fit.add_argument("--random-batches", action="store_true", help="random instead of length-bucketed batches")
    add_runtime_options(classify)
    classify.set_defaults(handler=run_classify)


def run_classify(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train classify``."""
    apply_runtime(args)
    from attnkit.training.classification import ClassifierConfig
    from attnkit.training.classifier_run import load_data, train_classifier

    data = load_data(args.data, test_path=args.test, text_column=args.text_column, label_column=args.label_column)
    config = ClassifierConfig(
        model=args.model,
        tokenizer=args.tokenizer,
        vocab_size=args.vocab_size,
        max_sentences=args.max_sentences,
        max_words=args.max_words,
        max_tokens=args.max_tokens,
        embed_dim=args.embed_dim,
        hidden=args.hidden,
        encoder=args.encoder,
        pooling=args.pooling,
        attention_padding=args.attention_padding,
        heads=args.heads,
        dropout=args.dropout,
        bigram_buckets=args.bigram_buckets,
    )
    fit_config = fit_config_from_args(args)
    report = train_classifier(
        data,
        config,
        fit_config,
        out_dir=args.out,
        batch_size=args.batch_size,
        valid_fraction=args.valid_fraction,
        resume=args.resume,
        bucketed=not args.random_batches,
    )
    if not is_main_process():
        return 0
    best = report.fit.best_metrics
    print(f"best epoch {report.fit.best_epoch}: valid accuracy {100 * best['accuracy']:.2f}%")
    if report.test_metrics is not None:
        print(
            f"test accuracy {100 * report.test_metrics['accuracy']:.2f}% on {int(report.test_metrics['count'])} documents"
        )
    print(f"trained in {report.train_seconds / 60:.1f} min; checkpoint: {report.checkpoint}")
    return 0
