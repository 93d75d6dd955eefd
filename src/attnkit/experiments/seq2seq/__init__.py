"""The sequence-to-sequence results tables: G2P, dates and the Bible, their runs, ensembles, curves and tables
(layer 6). The names below are re-exported lazily: reading the settings (``attnkit experiment --help``) loads no
torch.

| module | holds |
|---|---|
| :mod:`~attnkit.experiments.seq2seq.settings` | ``EXPERIMENTS``: each table's runs (the options a user would type) and ensembles |
| :mod:`~attnkit.experiments.seq2seq.run` | ``run_seq2seq_experiment``: trains, decodes and records one table |
| :mod:`~attnkit.experiments.seq2seq.curves` | validation curves read from ``metrics.csv``, and their plot |
| :mod:`~attnkit.experiments.seq2seq.tables` | the markdown of the tables, from ``docs/results/NAME.json`` |
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["EXPERIMENTS", "LENGTH_BUCKETS", "Seq2SeqExperiment", "slug"], "settings"),
    **dict.fromkeys(["bleu_by_length", "plot_bleu_by_length", "run_seq2seq_experiment"], "run"),
    **dict.fromkeys(["plot_validation_curves", "validation_curve"], "curves"),
    **dict.fromkeys(["bucket_label", "render_sections"], "tables"),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
