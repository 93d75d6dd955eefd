"""``python -m attnkit.cli`` (what ``torchrun -m attnkit.cli ...`` runs)."""

import sys

from attnkit.cli import main

sys.exit(main())
