"""The old path of :mod:`attnkit.functional.cross_entropy` (inference evaluates with it too); kept so that
``from attnkit.training.cross_entropy import CrossEntropyObjective`` still works."""

from attnkit.functional.cross_entropy import CrossEntropyObjective

__all__ = ["CrossEntropyObjective"]
