"""Datasets, file readers, tokenisers and batching (layer 5). Heavy dependencies are imported lazily."""
