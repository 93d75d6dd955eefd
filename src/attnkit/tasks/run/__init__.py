"""A training run's directory, guarded before anything is written: what it will write, its lock, its manifest
(layer 5). Nothing is imported here, and no torch in the modules: ``train``'s checks run before torch loads.

| module | holds |
|---|---|
| :mod:`~attnkit.tasks.run.plan` | ``plan_run``: every check of ``--out``, ``--resume``, ``--overwrite`` and the inputs, then ``writing()`` |
| :mod:`~attnkit.tasks.run.lock` | the run's lock file: one live writer per run directory |
| :mod:`~attnkit.tasks.run.manifest` | ``attnkit_run.json``: the settings and inputs a resumed run must repeat |
"""
