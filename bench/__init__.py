"""attnkit benchmarks: each module prints a table and writes JSON to ``bench/results/``; ``python -m bench.run_all`` runs them all.

Every benchmark process backs its large CPU buffers (2 MiB or more) with transparent huge pages, PyTorch's own
switch read once at its first allocation, hence set here before anything imports torch: a fresh 67 MB attention
weight buffer otherwise costs one page fault per 4 KiB (see :mod:`attnkit.functional.sdpa`). Both sides of every
comparison run with the same allocator.
"""

import os

os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
