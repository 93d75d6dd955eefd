"""Datasets, file readers, tokenisers and batching (layer 5). Heavy dependencies are imported lazily.

| module | holds |
|---|---|
| :mod:`~attnkit.data.reading` | ``DataError``; lines, UTF-8 and JSON read with ``file:line`` errors |
| :mod:`~attnkit.data.records` | the one streaming reader of every training file (CSV, TSV, JSONL, Parquet), ``BadRows`` |
| :mod:`~attnkit.data.streaming` | streamed batches (shuffle pool, buckets, rank strides), held-out rows, a first pass's helpers |
| :mod:`~attnkit.data.cache` | ``cache_dir``: the one cache root, and what lives under it |
| :mod:`~attnkit.data.id_cache` | the ids a streamed file encodes to, cached on disk (stands apart: imports nothing of attnkit but its entry module) |
| :mod:`~attnkit.data.id_cache_entry` | one id-cache entry's format, checksums, range checks and the text's content key |
| :mod:`~attnkit.data.builtin` | ``BuiltinDataSet``: one record for the built-in data sets of every task |
| :mod:`~attnkit.data.batching` | length-bucketed batches and padding |
| :mod:`~attnkit.data.inputs` | a text or a list of texts, as the loaded models take them |
| :mod:`~attnkit.data.input_files` | the texts of a ``--file`` that predict, explain, translate and faithfulness read alike |
| :mod:`~attnkit.data.classification` | the built-in text-classification data sets, ``stratified_split`` (vision's too) |
| :mod:`~attnkit.data.images` | the built-in image data set and image batches |
| :mod:`~attnkit.data.classify` | what serves classification only: labelled files and stream, tokeniser, sentences, word vectors |
| :mod:`~attnkit.data.seq2seq` | pairs: built-in data sets, pair files and stream, vocabularies, tokenisers, batching |
| :mod:`~attnkit.data.files` | old path of :mod:`attnkit.data.classify.files` (deprecated alias) |
| :mod:`~attnkit.data.field_rules` | old path of :mod:`attnkit.data.classify.field_rules` (deprecated alias) |
| :mod:`~attnkit.data.text_stream` | old path of :mod:`attnkit.data.classify.text_stream` (deprecated alias) |
| :mod:`~attnkit.data.tokenization` | old path of :mod:`attnkit.data.classify.tokenization` (deprecated alias) |
| :mod:`~attnkit.data.sentences` | old path of :mod:`attnkit.data.classify.sentences` (deprecated alias) |
| :mod:`~attnkit.data.embeddings` | old path of :mod:`attnkit.data.classify.embeddings` (deprecated alias) |
"""
