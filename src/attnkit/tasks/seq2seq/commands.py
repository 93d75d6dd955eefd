"""The seq2seq command hooks: ``attnkit train seq2seq`` and what ``evaluate`` / ``predict`` / ``explain`` do with a
``seq2seq`` checkpoint (layer 5; torch is imported only when a hook runs)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.tasks.options import add_runtime_options, add_training_options, positive_int, say
from attnkit.tasks.seq2seq.data_options import add_pair_file_arguments
from attnkit.tasks.seq2seq.distill.options import BUILTIN, add_distill_arguments, check_distill_arguments
from attnkit.tasks.seq2seq.distill.options import EXAMPLES as DISTILL_EXAMPLES
from attnkit.tasks.seq2seq.scoring import scoring_named
from attnkit.tasks.seq2seq.streamed_command import add_streaming_arguments, streams, train_streamed
from attnkit.tasks.seq2seq.translate_command import (
    add_decoding_arguments,
    check_decoding,
    decoding_options,
    print_translations,
)

if TYPE_CHECKING:
    from attnkit.data.seq2seq import Seq2SeqData
    from attnkit.tasks.seq2seq.distill.student import Distillation

ATTENTIONS = ("luong-dot", "luong-general", "luong-concat", "local-m", "local-p", "bahdanau", "none")

EXAMPLES = """examples:
  attnkit train seq2seq --data dates --model rnn --attention bahdanau --out runs/dates
  attnkit train seq2seq --data cmudict --model rnn --cell lstm --attention local-p --max-minutes 60 --out runs/g2p
  attnkit train seq2seq --data cmudict --model transformer --dim 256 --heads 4 --out runs/g2p-tf
  attnkit train seq2seq --data bible-en-es --model transformer --share-embeddings --out runs/bible
  attnkit train seq2seq --data pairs.tsv --valid dev.tsv --test test.tsv --out runs/mine
  attnkit train seq2seq --data pairs.txt --delimiter ';' --out runs/mine   columns separated by ';'
  attnkit train seq2seq --data pairs.jsonl --source-column en --target-column es \\
      --source-level subword --target-level subword --out runs/mine
  attnkit train seq2seq --data cmudict --out runs/g2p --resume           continue after an interruption
  torchrun --nproc-per-node 2 -m attnkit.cli train seq2seq --data cmudict --out runs/g2p   two processes (DDP)
"""
EXAMPLES += DISTILL_EXAMPLES
EXAMPLES += """
The best epoch is chosen on the validation split only: lowest WER for character/symbol targets (cmudict,
dates), highest BLEU for subword targets (bible-en-es). The test split is decoded once at the end.
Then: attnkit evaluate --checkpoint runs/g2p --beam 4;  attnkit translate --checkpoint runs/g2p --text abbey
"""

DESCRIPTION = (
    "Train an encoder-decoder: an RNN (GRU/LSTM) with Luong, local or Bahdanau attention (or none), or a "
    "Transformer. Checkpoints (safetensors + config.json + tokenizers) go to OUT/best and OUT/last."
)


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``attnkit train seq2seq``."""
    data = parser.add_argument_group("data")
    data.add_argument(
        "--data",
        required=True,
        help="a built-in data set name (cmudict, dates, bible-en-es) or a CSV/TSV/JSONL file of source/target pairs",
    )
    data.add_argument("--valid", default=None, help="validation pairs, for --data FILE (default: 5%% of it)")
    data.add_argument("--test", default=None, help="test pairs, for --data FILE (default: no test)")
    add_pair_file_arguments(data)
    levels = ["char", "symbol", "subword"]
    data.add_argument("--source-level", choices=levels, default="char", help="pair files: source units (char)")
    data.add_argument("--target-level", choices=levels, default="char", help="pair files: target units (char)")
    data.add_argument("--vocab-size", type=int, default=8000, help="subword vocabulary size (default 8000)")
    data.add_argument(
        "--limit", type=positive_int, default=None, help="the first N training pairs, N/4 valid/test (smoke)"
    )
    add_streaming_arguments(data)
    data.add_argument(
        "--max-source-length",
        type=positive_int,
        default=256,
        help="skip pairs whose source has more than N tokens, as the task's tokeniser counts them (default 256; "
        "keeps every pair of the built-in data sets)",
    )
    data.add_argument(
        "--max-target-length", type=positive_int, default=256, help="the same for the target side (default 256)"
    )
    data.add_argument(
        "--strict",
        action="store_true",
        help="refuse the data, naming file:line of the first pair over --max-source-length/--max-target-length, "
        "instead of skipping such pairs",
    )

    _add_model_arguments(parser)
    fit = add_training_options(parser, epochs=20, batch_size=64, lr=1e-3)
    fit.add_argument(
        "--label-smoothing",
        type=float,
        default=0.1,
        help="of the training loss (default 0.1: the training loss then reads higher than the validation loss)",
    )
    fit.add_argument("--no-test", action="store_true", help="do not decode the test split at the end")
    add_distill_arguments(parser)
    add_runtime_options(parser)


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The model options of ``attnkit train seq2seq``: the family, then each family's own (None: its default)."""
    model = parser.add_argument_group("model")
    model.add_argument("--model", choices=["rnn", "transformer"], default="rnn", help="default: rnn")
    model.add_argument("--dropout", type=float, default=None, help="default: 0.2 (rnn), 0.1 (transformer)")
    rnn = parser.add_argument_group("rnn model (--model rnn)")
    rnn.add_argument("--attention", choices=ATTENTIONS, default=None, help="default: luong-general")
    rnn.add_argument("--cell", choices=["gru", "lstm"], default=None, help="default: gru")
    rnn.add_argument("--embed-dim", type=int, default=None, help="default: 128")
    rnn.add_argument("--hidden", type=int, default=None, help="decoder state / encoder output size (default 256)")
    rnn.add_argument("--layers", type=int, default=None, help="recurrent layers (default 1)")
    rnn.add_argument("--unidirectional", action="store_true", help="a one-way encoder (default: bidirectional)")
    rnn.add_argument("--window", type=int, default=None, help="local-m/local-p half-width D (default 10)")
    rnn.add_argument("--local-score", choices=["dot", "general", "concat"], default=None, help="default: general")
    tf = parser.add_argument_group("transformer model (--model transformer)")
    tf.add_argument("--dim", type=int, default=None, help="model size (default 256)")
    tf.add_argument("--heads", type=int, default=None, help="attention heads (default 4)")
    tf.add_argument("--encoder-layers", type=int, default=None, help="default 3")
    tf.add_argument("--decoder-layers", type=int, default=None, help="default 3")
    tf.add_argument("--ff-dim", type=int, default=None, help="feed-forward size (default 4 x dim)")
    tf.add_argument("--positions", choices=["sinusoidal", "learned", "rotary"], default=None)
    tf.add_argument("--post-norm", action="store_true", help="post-norm layers (default: pre-norm)")
    tf.add_argument("--share-embeddings", action="store_true", help="one table for both sides (shared vocabulary)")


def train(args: argparse.Namespace) -> int:
    """Handler of ``attnkit train seq2seq``."""
    from attnkit.data.seq2seq import data_set_names
    from attnkit.tasks.run.plan import train_writes
    from attnkit.tasks.seq2seq.config import KIND, config_from_args
    from attnkit.tasks.seq2seq.training import TOKENIZER_DIR, train_seq2seq
    from attnkit.tasks.train_setup import start_training

    start = start_training(
        args,
        command="train seq2seq",
        kind=KIND,
        inputs={
            "data": (args.data, data_set_names()),
            "valid": (args.valid, ()),
            "test": (args.test, ()),
            "distill_unlabelled": (args.distill_unlabelled, (BUILTIN,)),
        },
        writes=train_writes(args, TOKENIZER_DIR),
        config_from_args=config_from_args,
        config_from_init=lambda init: config_from_args(args, init),
        streams=streams,
    )
    options = trainer_options(args)
    distill = _distillation(args, start)
    if start.streamed:
        return _report(train_streamed(args, start, options))
    data, distill, load_seconds = _read_in_memory(args, distill)
    if args.label_smoothing:
        say(f"label smoothing {args.label_smoothing:g}: the training loss reads higher than the validation loss")
    in_memory = {"strict": args.strict, "init_from": start.init, "load_seconds": load_seconds, "distill": distill}
    with start.plan.writing():
        report = train_seq2seq(data, start.config, start.fit_config, **in_memory, **options)
    return _report(report)


def _read_in_memory(
    args: argparse.Namespace, distill: Distillation | None
) -> tuple[Seq2SeqData, Distillation | None, float]:
    """The pairs of ``--data`` (the first ``--limit`` of them), said with their sizes; ``distill`` holding out every
    source of the whole data set; and the seconds reading took."""
    from attnkit.tasks.seq2seq.data import load_data, subset

    started = time.monotonic()
    same_named = ("valid", "test", "source_column", "target_column", "source_level", "target_level", "delimiter")
    data = load_data(args.data, **{name: getattr(args, name) for name in same_named})
    if distill is not None:  # the whole data set's sources, not only those a --limit run keeps
        distill = dataclasses.replace(distill, held_out=frozenset(s for s, _ in (*data.train, *data.valid, *data.test)))
    if args.limit is not None:
        data = subset(data, args.limit)
    load_seconds = time.monotonic() - started
    sizes = data.sizes
    say(
        f"{data.name}: {sizes['train']} training, {sizes['valid']} validation, {sizes['test']} test pairs "
        f"({data.source_level} -> {data.target_level})"
    )
    return data, distill, load_seconds


def _distillation(args: argparse.Namespace, start):
    """The run's :class:`~attnkit.tasks.seq2seq.distill.student.Distillation` (None without ``--distill-from``),
    its options and teachers checked (configs only) before any data is read."""
    from attnkit.tasks.seq2seq.distill.student import distillation_from_args
    from attnkit.tasks.seq2seq.distill.teachers import resolve_teachers

    check_distill_arguments(args, streamed=start.streamed)
    distill = distillation_from_args(args, precision=start.fit_config.precision)
    if distill is not None:
        resolve_teachers(distill.teachers)
    return distill


def trainer_options(args: argparse.Namespace) -> dict:
    """What the trainer takes from the arguments for pairs in memory and streamed alike."""
    run = {"out_dir": args.out, "batch_size": args.batch_size, "vocab_size": args.vocab_size, "resume": args.resume}
    limits = {"max_source_length": args.max_source_length, "max_target_length": args.max_target_length}
    return {**run, "evaluate_test": not args.no_test, **limits, "device": args.device}


def _report(report) -> int:
    """Print the run's summary; the hook's exit code."""
    scoring = scoring_named(report.config.metrics)
    say(f"best epoch {report.fit.best_epoch}: valid {scoring.summary(report.fit.best_metrics)}")
    if report.test_metrics is not None:
        say(f"test {scoring.summary(report.test_metrics)}")
    if "distill" in report.details:
        from attnkit.tasks.seq2seq.distill.student import summary

        say(summary(report.details["distill"]))
    seconds = report.train_seconds
    took = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    epochs = len(report.fit.history)
    say(
        f"{report.num_parameters:,} parameters, trained {took} over {epochs} epoch{'' if epochs == 1 else 's'}"
        f"; checkpoint: {report.checkpoint}"
    )
    return 0


def load(checkpoint: Path, *, device: str = "auto", precision: str = "fp32", quantize: str | None = None):
    """The ready model of a seq2seq checkpoint (:class:`~attnkit.tasks.seq2seq.inference.LoadedSeq2Seq`), or of a
    CTranslate2 export (:class:`~attnkit.tasks.seq2seq.ctranslate2.loaded.LoadedExport`: ``precision`` fp32 only)."""
    from attnkit.tasks.seq2seq.ctranslate2.probe import is_export

    if is_export(checkpoint):
        from attnkit.tasks.seq2seq.ctranslate2.loaded import load_export

        if precision != "fp32":
            raise ValueError(f"{checkpoint}: an export runs in the weight type it was exported with; no --precision")
        return load_export(checkpoint, device=device)
    from attnkit.tasks.seq2seq.inference import load_seq2seq

    return load_seq2seq(checkpoint, device=device, precision=precision, quantize=quantize)


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """Seq2seq options of ``attnkit evaluate``."""
    group = parser.add_argument_group("seq2seq data")
    group.add_argument("--source-column", default="source", help="column/key of the source (default: source)")
    group.add_argument("--target-column", default="target", help="column/key of the target (default: target)")
    group.add_argument("--split", choices=["valid", "test"], default=None, help="built-in data sets (default test)")
    group.add_argument(
        "--backend",
        choices=["native", "ctranslate2"],
        default="native",
        help="decode with attnkit (default), or with CTranslate2: --checkpoint is then one `attnkit export` "
        "directory, scored the same way (no loss), with the decoding time",
    )
    add_decoding_arguments(parser)


def evaluate(args: argparse.Namespace, checkpoints: Sequence[Path]) -> int:
    """``attnkit evaluate`` for seq2seq checkpoints (several decode as an ensemble): WER/PER or BLEU/chrF; with
    ``--backend ctranslate2``, of one export (:func:`evaluate_export`)."""
    from attnkit.checkpointing import CheckpointError
    from attnkit.tasks.seq2seq.ctranslate2.probe import export_message, is_export
    from attnkit.tasks.seq2seq.data import evaluation_data
    from attnkit.tasks.seq2seq.inference import evaluate_seq2seq, load_seq2seq_ensemble

    if args.backend == "ctranslate2":
        return evaluate_export(args)
    exported = [checkpoint for checkpoint in checkpoints if is_export(checkpoint)]
    if exported:
        raise CheckpointError(export_message(exported[0]))
    check_decoding(args)
    loaded = load_seq2seq_ensemble(
        checkpoints, device=args.device, precision=args.precision, quantize=getattr(args, "quantize", None)
    )
    columns = {"source_column": args.source_column, "target_column": args.target_column, "delimiter": args.delimiter}
    pairs, references, label = evaluation_data(loaded.config, args.data, split=args.split, **columns)
    metrics = evaluate_seq2seq(loaded, pairs, references, **decoding_options(args))
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}"
    if getattr(args, "json", False):
        record = {"data": label, "decoding": decoding, **{k: round(v, 4) for k, v in metrics.items()}}
        print(json.dumps(record, ensure_ascii=False))
        return 0
    say(f"{scoring_named(loaded.config.metrics).summary(metrics)} of {label} ({decoding}; loss {metrics['loss']:.4f})")
    return 0


def evaluate_export(args: argparse.Namespace) -> int:
    """``attnkit evaluate --backend ctranslate2``: decode the split (or file) of an export's task with CTranslate2
    and score it as the native evaluation does, with the decoding's wall time."""
    from attnkit.tasks.seq2seq.ctranslate2.evaluate import (
        check_ctranslate2_options,
        evaluate_ctranslate2,
        export_config,
    )
    from attnkit.tasks.seq2seq.ctranslate2.export import load_ctranslate2
    from attnkit.tasks.seq2seq.data import evaluation_data

    check_decoding(args)
    device, index = check_ctranslate2_options(args)
    translator = load_ctranslate2(args.checkpoint[0], device=device, device_index=index, threads=args.threads or 0)
    config = export_config(translator.manifest, args.checkpoint[0])
    scoring = scoring_named(config.metrics)
    columns = {"source_column": args.source_column, "target_column": args.target_column, "delimiter": args.delimiter}
    pairs, references, label = evaluation_data(config, args.data, split=args.split, **columns)
    metrics = evaluate_ctranslate2(translator, pairs, references, scoring=scoring, **decoding_options(args))
    decoding = "greedy" if args.beam == 1 else f"beam {args.beam}"
    weights = translator.manifest.get("quantization") or "float32"
    if args.json:
        record = {"data": label, "decoding": decoding, "backend": "ctranslate2", "weights": weights}
        print(json.dumps({**record, **{k: round(v, 4) for k, v in metrics.items()}}, ensure_ascii=False))
        return 0
    say(
        f"{scoring.summary(metrics)} of {label} ({decoding}; CTranslate2, {weights} weights; "
        f"decoded in {metrics['decode_seconds']:.2f} s)"
    )
    return 0


def predict(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit predict`` with a seq2seq checkpoint: ``attnkit translate`` with one checkpoint."""
    check_decoding(args)
    loaded = load(checkpoint, device=args.device, precision=args.precision, quantize=getattr(args, "quantize", None))
    return print_translations(args, loaded)


def explain(args: argparse.Namespace, checkpoint: Path) -> Path:
    """``attnkit explain``: the source x target alignment; for the Transformer every layer and head too."""
    from attnkit.explain.faithfulness.methods import PANEL_STEPS
    from attnkit.tasks.options import read_texts
    from attnkit.tasks.seq2seq.explain import seq2seq_report
    from attnkit.tasks.seq2seq.faithfulness import text_faithfulness

    texts = read_texts(args)
    loaded = load(checkpoint, device=args.device, precision=args.precision)
    tests = None
    if args.faithfulness:
        steps = getattr(args, "steps", PANEL_STEPS)
        tests = text_faithfulness(loaded, texts, erase=args.erase, seed=args.seed, steps=steps)
    return seq2seq_report(loaded, texts, args.out, title=args.title, faithfulness=tests)


def faithfulness(args: argparse.Namespace, checkpoint: Path) -> int:
    """``attnkit faithfulness``: the tests over the source tokens for each emitted token."""
    from attnkit.tasks.seq2seq.faithfulness import checkpoint_faithfulness

    return checkpoint_faithfulness(args, checkpoint, load)
