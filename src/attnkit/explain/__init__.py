"""Pictures and reports of what a model attended to (layer 5). matplotlib is imported lazily."""
