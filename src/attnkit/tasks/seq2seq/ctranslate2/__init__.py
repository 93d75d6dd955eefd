"""A trained Transformer shipped to CTranslate2, decoded there and scored as attnkit scores it (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.export` | ``export_ctranslate2``, ``load_ctranslate2``: the export directory |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.spec` | the weight mapping onto CTranslate2's ``TransformerSpec`` |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.manifest` | ``attnkit_export.json`` and the checks that refuse a changed export |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.translator` | ``CTranslate2Translator``: decoding, tokenised by attnkit |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.evaluate` | ``attnkit evaluate --backend ctranslate2`` with the task's own scorer |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.command` | ``attnkit export`` |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.probe` | whether a directory is an export, its task's kind, why it is no checkpoint |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2.loaded` | ``LoadedExport``: what ``attnkit.load("exports/x")`` returns |

Nothing is imported here: ``attnkit --help`` reads ``command`` and ``probe`` and must not load torch or CTranslate2.
"""
