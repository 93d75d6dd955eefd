"""Shared test settings: deterministic seeds, few threads (CI has 2 cores, one test worker each), a bounded Hypothesis profile."""

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

# Under pytest-xdist (`make test`: one worker per core) each worker gets its share of the cores, so that workers
# do not oversubscribe the machine; run alone, the suite uses up to 2 threads.
_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1) // _workers))

settings.register_profile(
    "attnkit",
    max_examples=int(os.environ.get("ATTNKIT_HYPOTHESIS_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.load_profile("attnkit")


@pytest.fixture
def one_thread():
    """One torch thread for the test (restored after): tiny models run fastest on one thread, and far faster on a
    loaded shared CPU (no OpenMP spinning). Modules of tiny models use it with
    ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
