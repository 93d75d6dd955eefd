"""Reproducible experiments behind ``docs/results.md`` (layer 6): each trains the runs of one results table
through the same code paths as the CLI, records what it measured as JSON under ``docs/results/`` and re-renders
``docs/results.md``. ``attnkit experiment NAME`` runs one; finished runs are reused and interrupted ones resumed,
so a table can be completed over several sittings.
"""
