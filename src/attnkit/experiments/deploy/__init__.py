"""``attnkit experiment deploy``: a trained Transformer decoded by attnkit (float32, int8) and by CTranslate2
(float32, int8), scored by the task's own scorer and timed, each decoder in its own process (layer 6). The names
below are re-exported lazily.

| module | holds |
|---|---|
| :mod:`~attnkit.experiments.deploy.run` | ``run_deploy``: exports, decodes, scores, times and records |
| :mod:`~attnkit.experiments.deploy.sides` | the decoders, each built in its own fresh process |
| :mod:`~attnkit.experiments.deploy.table` | the markdown of the deployment table, from ``docs/results/deploy.json`` |
"""

from __future__ import annotations

from attnkit.explain._lazy import lazy_exports

_EXPORTS = {"DECODERS": "run", "run_deploy": "run", "render_deploy": "table"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
