"""A bounded cache of search matches for the queries with syntax, one per loaded language.

A query with phrases, exclusions or OR groups can cost milliseconds where a plain query costs
tens of microseconds (docs/search.md, "Cost model"), and the same hostile query sent again
should not cost it again. The cache belongs to a LanguageData, which belongs to one loaded
bundle: a publish loads a new bundle with an empty cache, so an entry never outlives the
segments it was computed from (the key is the query text; the bundle is the owner).

Bounds, per language per worker process: at most MAX_ENTRIES queries and MAX_BYTES of arrays
(20 bytes a match: uint32 position, float64 score, int64 title count); the least recently
used entries go first, and a result larger than MAX_BYTES / 4 is not kept. Plain queries are
never cached: they are cheap, and caching them would only take memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

MAX_ENTRIES = 64
MAX_BYTES = 8 << 20

Matches = tuple[np.ndarray, np.ndarray, np.ndarray]


class MatchCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Matches] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, query: str) -> Matches | None:
        with self._lock:
            found = self._entries.get(query)
            if found is not None:
                self._entries.move_to_end(query)
            return found

    def put(self, query: str, matches: Matches) -> None:
        size = sum(a.nbytes for a in matches)
        if size > self.max_bytes // 4:
            return
        for array in matches:  # callers only read them; make sure nobody writes
            array.flags.writeable = False
        with self._lock:
            old = self._entries.pop(query, None)
            if old is not None:
                self._bytes -= sum(a.nbytes for a in old)
            self._entries[query] = matches
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= sum(a.nbytes for a in dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes) held."""
        with self._lock:
            return len(self._entries), self._bytes
