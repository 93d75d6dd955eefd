"""Knowledge distillation into one seq2seq model: ``attnkit train seq2seq --distill-from A [B ...]`` (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.seq2seq.distill.student` | ``Distillation`` (the options) and ``distilled_data``: the student's training pairs |
| :mod:`~attnkit.tasks.seq2seq.distill.teachers` | the teachers (one checkpoint or an ensemble), their vocabulary check, their beam outputs through the cache |
| :mod:`~attnkit.tasks.seq2seq.distill.cache` | ``TeacherCache``: the outputs on disk under ``$ATTNKIT_CACHE/teachers/KEY/``, chunk by chunk, checked when read |
| :mod:`~attnkit.tasks.seq2seq.distill.unlabelled` | sources with no gold for the teachers to label (``builtin`` English words, or a file) |
| :mod:`~attnkit.tasks.seq2seq.distill.options` | the command-line options (no torch) |

Nothing is imported here, so that ``attnkit train seq2seq --help`` reads the options without loading torch.
"""
