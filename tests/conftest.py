"""Shared test settings: deterministic seeds, few threads (CI has 2 cores), a bounded Hypothesis profile."""

import os

import torch
from hypothesis import HealthCheck, settings

torch.set_num_threads(min(2, os.cpu_count() or 1))

settings.register_profile(
    "attnkit",
    max_examples=int(os.environ.get("ATTNKIT_HYPOTHESIS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.load_profile("attnkit")
