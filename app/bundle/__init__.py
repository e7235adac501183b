"""The bundle: per-language article data compiled offline into memory-mappable files."""
