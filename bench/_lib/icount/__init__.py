"""Instruction counts of attnkit's hot paths under two revisions (see :mod:`bench.instruction_counts`)."""
