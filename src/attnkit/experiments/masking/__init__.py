"""``attnkit experiment masking``: does masking the padding change what a classifier learns? Runs with and without
masks, their padding statistics and the table (layer 6). The names below are re-exported lazily.

| module | holds |
|---|---|
| :mod:`~attnkit.experiments.masking.run` | ``run_masking``: the runs of each model and mode, and ``padding_statistics`` |
| :mod:`~attnkit.experiments.masking.table` | the markdown of the masking table |
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = dict.fromkeys(["BATCH_SIZE", "DATA", "MODELS", "padding_statistics", "run_masking", "train_argv"], "run")
_EXPORTS["render_masking"] = "table"
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
