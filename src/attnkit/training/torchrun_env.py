"""The old path of :mod:`attnkit.runtime.torchrun_env` (torchrun's environment is read at run time, not only in
training); kept so that ``from attnkit.training.torchrun_env import torchrun_env`` still works."""

from attnkit.runtime.torchrun_env import TorchrunEnv, torchrun_env

__all__ = ["TorchrunEnv", "torchrun_env"]
