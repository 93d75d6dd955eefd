"""The maintainer's tools, run from the repository root and outside what ``import attnkit`` reaches.

| module | holds |
|---|---|
| :mod:`~scripts.ship_model` | ``python -m scripts.ship_model RUN NAME ...``: a finished run becomes a shipped model |
| :mod:`~scripts.model_cards` | ``MODEL_CARD.md`` from a card; which figures are better |
"""
