"""Helpers shared by the search tests: build an index in memory and open a Searcher on it."""

from __future__ import annotations

from collections.abc import Sequence

from app.search.indexer import IndexDoc, build_index
from app.search.searcher import Searcher


def searcher_for(
    language: str, docs: Sequence[IndexDoc], pair_list: tuple[str, ...] | None = None
) -> Searcher:
    """A Searcher of docs; ``pair_list`` as build_index takes it (None: chosen from docs)."""
    files = build_index(language, docs, pair_list)
    return Searcher(language, {name: memoryview(data) for name, data in files.items()})


def doc(
    title: str = "", summary: str = "", content: str = "", tags: Sequence[str] = ()
) -> IndexDoc:
    return IndexDoc(title, summary, content, tuple(tags))
