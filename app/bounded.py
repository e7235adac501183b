"""The one bounded cache the server keeps things in: finished responses (app.response_cache)
and search matches (app.search.cache).

`Bounded` holds at most `max_entries` values and `max_bytes` of their sizes, least recently
used out first; a value larger than `max_bytes // share` is never kept (a few large values
must not push out many small ones). A hit is a dictionary lookup and a move to the end of
an OrderedDict, without a lock: each is one step under the GIL, and a key evicted between
the two is a hit all the same. Insertions and evictions take the lock (gthread workers).

Why not a library: a hit of `cachetools.LRUCache` (8.0.0) took 0.23 µs, 0.40 µs with the
lock it needs between threads, against 0.12 µs here and 0.03 µs for a plain dict, where the
response cache answers a repeat in about 1.4 µs in all (`bench/cache_hit.py`;
docs/benchmarks.md, "One answer per page and coding").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Bounded(Generic[K, V]):
    """Values by key, within `max_bytes` (the sizes given to `put`) and `max_entries`."""

    __slots__ = ("_entries", "_lock", "_size", "_sizes", "max_bytes", "max_entries", "share")

    def __init__(self, max_bytes: int, max_entries: int, share: int) -> None:
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.share = share
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        entries = self._entries
        value = entries.get(key)
        if value is not None:
            try:  # noqa: SIM105 - contextlib.suppress costs more on the hit path
                entries.move_to_end(key)
            except KeyError:  # evicted by another thread since the lookup
                pass
        return value

    def fits(self, size: int) -> bool:
        """Whether a value of `size` would be kept."""
        return size <= self.max_bytes // self.share

    def put(self, key: K, value: V, size: int) -> bool:
        """Keep `value` (of `size`), evicting the least recently used; False when it is
        over the share of the budget and not kept."""
        if not self.fits(size):
            return False
        with self._lock:
            entries, sizes = self._entries, self._sizes
            if key in entries:
                self._size -= sizes[key]
            entries[key] = value
            entries.move_to_end(key)
            sizes[key] = size
            self._size += size
            while self._size > self.max_bytes or len(entries) > self.max_entries:
                oldest, _ = entries.popitem(last=False)
                self._size -= sizes.pop(oldest)
        return True

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._sizes.clear()
            self._size = 0

    @property
    def size(self) -> int:
        """Bytes held (the sum of the kept values' sizes)."""
        return self._size

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
