"""Data that serves text classification only: labelled-text files and their stream, the tokeniser, sentence
splitting, word vectors (layer 5). Nothing is imported here.

| module | holds |
|---|---|
| :mod:`~attnkit.data.classify.files` | labelled text from CSV, TSV, JSONL and Parquet files, checked row by row |
| :mod:`~attnkit.data.classify.field_rules` | the label rule and the cut of long texts |
| :mod:`~attnkit.data.classify.text_stream` | ``TextFileStream``: a labelled file too large for memory, scanned once, cached |
| :mod:`~attnkit.data.classify.tokenization` | ``TextTokenizer``: word, BPE or unigram tokens, saved as ``tokenizer.json`` |
| :mod:`~attnkit.data.classify.sentences` | splitting a document into sentences (for the HAN) |
| :mod:`~attnkit.data.classify.embeddings` | word vectors: files, GloVe, self-trained word2vec / fastText |
"""
