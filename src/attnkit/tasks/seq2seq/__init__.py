"""Sequence to sequence: RNN encoder-decoders with Luong or Bahdanau attention (or none) and Transformers (layer 5).

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.seq2seq.config` | ``KIND``, ``Seq2SeqConfig`` (the checkpoint's ``config.json``: names, mapped to objects by the builders) from the arguments |
| :mod:`~attnkit.tasks.seq2seq.data` | built-in data sets and pair files; references per source |
| :mod:`~attnkit.tasks.seq2seq.objective` | the objective ``fit`` trains on: label-smoothed loss, decoded metrics |
| :mod:`~attnkit.tasks.seq2seq.metrics` | edit distance, WER/PER with several references, BLEU and chrF |
| :mod:`~attnkit.tasks.seq2seq.scoring` | how decoded outputs are scored: ``SEQUENCE`` (WER/PER) or ``TEXT`` (BLEU/chrF) |
| :mod:`~attnkit.tasks.seq2seq.training` | ``train_seq2seq``, one trainer over pairs in memory (``InMemoryPairs``) or streamed |
| :mod:`~attnkit.tasks.seq2seq.inference` | ``load_seq2seq`` -> ``LoadedSeq2Seq`` (``translate``, ``evaluate``), ensembles |
| :mod:`~attnkit.tasks.seq2seq.explain` | the alignment report |
| :mod:`~attnkit.tasks.seq2seq.faithfulness` | the faithfulness adapter: an emitted token over its source tokens (``LoadedSeq2Seq.faithfulness``) |
| :mod:`~attnkit.tasks.seq2seq.phonetisaurus` | Phonetisaurus, the WFST G2P peer baseline |
| :mod:`~attnkit.tasks.seq2seq.data_options` | the pair-file options of ``train seq2seq`` (columns, ``--delimiter``) |
| :mod:`~attnkit.tasks.seq2seq.commands` | the command hooks (``attnkit train seq2seq``, evaluate, predict, explain) |
| :mod:`~attnkit.tasks.seq2seq.translate_command` | ``attnkit translate`` |
| :mod:`~attnkit.tasks.seq2seq.streamed_command` | when ``train seq2seq`` streams its pair file, and that run |
| :mod:`~attnkit.tasks.seq2seq.streamed_pairs` | ``StreamedPairs``: a pair file read as a stream (``--streaming``) |
| :mod:`~attnkit.tasks.seq2seq.distill` | knowledge distillation: a student trained on its teachers' beam outputs (``--distill-from``) |
| :mod:`~attnkit.tasks.seq2seq.ctranslate2` | CTranslate2 export and decoding; ``attnkit export`` (``ctranslate2.command``) |
"""

from attnkit.tasks.seq2seq import commands, translate_command
from attnkit.tasks.seq2seq.ctranslate2 import command as export_command
from attnkit.tasks.seq2seq.ctranslate2.probe import EXPORTS
from attnkit.tasks.spec import TaskSpec

SPEC = TaskSpec.from_commands(
    commands,
    kind="seq2seq",
    name="seq2seq",
    help="sequence-to-sequence: G2P (cmudict), dates, EN->ES Bible, or your pairs",
    add_predict_arguments=translate_command.add_decoding_arguments,
    commands=(translate_command.register, export_command.register),
    ensembles=True,
    exports=EXPORTS,
)
