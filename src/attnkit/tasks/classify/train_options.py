"""The options of ``attnkit train classify``, one function per group of its ``--help`` (data, the attention, the
network, fitting)."""

from __future__ import annotations

import argparse

from attnkit.tasks.options import (
    DELIMITER_HELP,
    delimiter_option,
    non_negative_float,
    non_negative_int,
    positive_int,
    valid_fraction,
)
from attnkit.tasks.train_setup import add_scan_option

__all__ = ["add_attention_arguments", "add_data_arguments", "add_fit_arguments", "add_network_arguments"]


def add_data_arguments(data: argparse._ArgumentGroup) -> None:
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


def add_attention_arguments(model: argparse._ArgumentGroup) -> None:
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


def add_network_arguments(model: argparse._ArgumentGroup) -> None:
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
        help="add hashed word-bigram embeddings with this many buckets, fastText-style (HAN: within a sentence; "
        "default 0: off)",
    )
    model.add_argument("--hidden", type=positive_int, default=64, help="GRU hidden size per direction (default 64)")
    model.add_argument("--dropout", type=float, default=0.3)
    model.add_argument("--tokenizer", choices=["word", "wordpiece", "bpe"], default="word")
    model.add_argument("--vocab-size", type=positive_int, default=30000)
    model.add_argument("--max-tokens", type=positive_int, default=800, help="pooled: tokens kept per document")
    model.add_argument("--max-sentences", type=positive_int, default=30, help="HAN: sentences kept per document")
    model.add_argument("--max-words", type=positive_int, default=50, help="HAN: words kept per sentence")


def add_fit_arguments(fit: argparse._ArgumentGroup) -> None:
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
