"""A bounded cache of search matches for the queries with syntax, one per loaded language.

A query with phrases, exclusions or OR groups can cost milliseconds where a plain query costs
tens of microseconds (docs/search.md, "Cost model"), and the same hostile query sent again
should not cost it again. The cache belongs to a LanguageData, which belongs to one loaded
bundle: a publish loads a new bundle with an empty cache, so an entry never outlives the
segments it was computed from (the key is the query text; the bundle is the owner).

Bounds, per language per worker process: at most MAX_ENTRIES queries and MAX_BYTES of arrays
(20 bytes a match: uint32 position, float64 score, int64 title count); the least recently
used entries go first, and a result larger than MAX_BYTES / 4 is not kept: the block every
cache of the server is made of (app.bounded). Plain queries are never cached: they are
cheap, and caching them would only take memory.
"""

from __future__ import annotations

import numpy as np

from app.bounded import Bounded

MAX_ENTRIES = 64
MAX_BYTES = 8 << 20

Matches = tuple[np.ndarray, np.ndarray, np.ndarray]


class MatchCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._entries: Bounded[str, Matches] = Bounded(max_bytes, max_entries, share=4)

    def get(self, query: str) -> Matches | None:
        return self._entries.get(query)

    def put(self, query: str, matches: Matches) -> None:
        size = sum(a.nbytes for a in matches)
        if not self._entries.fits(size):
            return
        for array in matches:  # callers only read them; make sure nobody writes
            array.flags.writeable = False
        self._entries.put(query, matches, size)

    def clear(self) -> None:
        self._entries.clear()

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes) held."""
        return len(self._entries), self._entries.size
