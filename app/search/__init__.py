"""Full-text search: shared analysers, the build-time indexer and the request-path searcher."""
