"""``attnkit evaluate``: score a checkpoint on a test split or a file. The checkpoint's ``config.json`` says its
kind: a classifier gets accuracy; a seq2seq model gets WER/PER (character/symbol targets) or BLEU/chrF (text)."""

from __future__ import annotations

import argparse

from attnkit.cli.common import add_runtime_options, apply_runtime

EXAMPLES = """examples:
  attnkit evaluate --checkpoint runs/ff/best --data fine-foods
  attnkit evaluate --checkpoint runs/mine/best --data held_out.csv --label-column topic
  attnkit evaluate --checkpoint runs/g2p                      seq2seq: the test split of the task it was trained on
  attnkit evaluate --checkpoint runs/g2p --beam 5 --split valid
  attnkit evaluate --checkpoint runs/bible/best --beam 4 --length-penalty 1.0
  attnkit evaluate --checkpoint runs/mine --data test_pairs.tsv  seq2seq: every pair of a file
  attnkit evaluate --checkpoint runs/g2p-rnn runs/g2p-transformer --beam 5   seq2seq: an ensemble of both
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``evaluate``."""
    parser = sub.add_parser(
        "evaluate",
        help="evaluate a checkpoint",
        description="Evaluate a trained classifier (accuracy) or seq2seq model (WER/PER or BLEU/chrF) on a "
        "built-in dataset's test split or on a file.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--checkpoint",
        required=True,
        nargs="+",
        help="a checkpoint directory (e.g. runs/ff/best); seq2seq: several, trained on one task with one "
        "vocabulary, decode as an ensemble (their next-token distributions averaged)",
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--data",
        default=None,
        help="a built-in dataset/task or a file (CSV/TSV/JSONL); classifiers need it, seq2seq models default "
        "to the built-in task they were trained on",
    )
    data.add_argument("--text-column", default="text", help="classifiers: column/key of the text (default: text)")
    data.add_argument("--label-column", default="label", help="classifiers: column/key of the label (default: label)")
    data.add_argument("--source-column", default="source", help="seq2seq: column/key of the source (default: source)")
    data.add_argument("--target-column", default="target", help="seq2seq: column/key of the target (default: target)")
    data.add_argument("--split", choices=["valid", "test"], default=None, help="seq2seq, built-in tasks (default test)")
    decode = parser.add_argument_group("seq2seq decoding")
    decode.add_argument("--beam", type=int, default=1, help="beam size; 1 decodes greedily (default 1)")
    decode.add_argument("--length-penalty", type=float, default=1.0, help="score = log P / length^α (default 1)")
    decode.add_argument("--max-len", type=int, default=None, help="most tokens per output (default 2·source + 10)")
    parser.add_argument("--batch-size", type=int, default=64)
    add_runtime_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Handler of ``attnkit evaluate``: dispatch on the checkpoint's kind."""
    apply_runtime(args)
    from attnkit.training.checkpoint import read_config
    from attnkit.training.seq2seq_inference import resolve_checkpoint

    args.checkpoint = [resolve_checkpoint(checkpoint) for checkpoint in args.checkpoint]
    kinds = [read_config(checkpoint).get("kind") for checkpoint in args.checkpoint]
    if set(kinds) == {"seq2seq"}:
        return _evaluate_seq2seq(args)
    if len(args.checkpoint) > 1:
        raise ValueError(
            f"only seq2seq checkpoints can be evaluated as an ensemble; got kinds {', '.join(map(str, kinds))}"
        )
    args.checkpoint, kind = args.checkpoint[0], kinds[0]
    if kind == "classifier":
        return _evaluate_classifier(args)
    raise ValueError(f"{args.checkpoint}: cannot evaluate a checkpoint of kind {kind!r} (classifier or seq2seq)")


def _evaluate_seq2seq(args: argparse.Namespace) -> int:
    from attnkit.cli.train_seq2seq import format_metrics
    from attnkit.training.seq2seq_inference import evaluate_seq2seq, load_seq2seq_ensemble
    from attnkit.training.seq2seq_run import evaluation_data

    if args.beam < 1:
        raise ValueError(f"--beam must be >= 1, got {args.beam}")
    loaded = load_seq2seq_ensemble(args.checkpoint)
    pairs, references, label = evaluation_data(
        loaded.config,
        args.data,
        split=args.split,
        source_column=args.source_column,
        target_column=args.target_column,
    )
    metrics = evaluate_seq2seq(
        loaded,
        pairs,
        references,
        beam_size=args.beam,
        batch_size=args.batch_size,
        length_penalty=args.length_penalty,
        max_len=args.max_len,
    )
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}"
    print(f"{format_metrics(metrics)} of {label} ({decoding}; loss {metrics['loss']:.4f})")
    return 0


def _evaluate_classifier(args: argparse.Namespace) -> int:
    from attnkit.data.classification import builtin_names
    from attnkit.training.classifier_run import evaluate_classifier, load_classifier, load_data

    if args.data is None:
        raise ValueError("a classifier checkpoint needs --data (a built-in dataset or a labelled file)")
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
