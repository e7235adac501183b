"""News article delivery service: read API over memory-mapped bundles, plus comments."""
