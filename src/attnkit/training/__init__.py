"""Training loop, checkpoints and metrics (layer 5)."""
