"""Id -> gid lookups over a language's sorted ids: `IdIndex`, the server's, in O(1) through an
open-addressing hash table; `SortedIds`, the builder's, a binary search (ids and story ids).

The builder writes `ids.hash` (a generation file, app.bundle.format) beside `ids.bin`,
`ids.off` and `ids.gid`; the server looks an id up with one hash, usually one probe and one
comparison of bytes, where a binary search over the mapped ids took about 17 Python-level
comparisons for 100,000 articles (docs/architecture.md, "Bundle layout").

Layout: a power-of-two number of little-endian uint32 slots, at least twice the number of
ids (load factor <= 0.5, so runs of probes stay short); slot value 0 is empty, k > 0 names
the (k-1)-th id of the sorted list. Key: the id's UTF-8 bytes; hash: XXH3-64 of them, masked
to the table size; collisions probe the next slot (linear probing). Deterministic: ids are
inserted in sorted order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

from app.bundle import format as fmt
from app.sorted_bytes import SortedBytes

_hash = xxhash.xxh3_64_intdigest


def table_size(count: int) -> int:
    """The smallest power of two >= 2 x count (and >= 2: one slot always stays empty)."""
    return max(2, 1 << (2 * count - 1).bit_length()) if count else 2


def build_table(ids: Sequence[bytes]) -> bytes:
    """`ids.hash` for `ids` (in their sorted order)."""
    size = table_size(len(ids))
    mask = size - 1
    table = [0] * size
    for i, key in enumerate(ids):
        slot = _hash(key) & mask
        while table[slot]:
            slot = (slot + 1) & mask
        table[slot] = i + 1
    return np.asarray(table, dtype="<u4").tobytes()


class IdIndex:
    """Reads one language's id index: `get(id)` is the gid of that article, or None."""

    __slots__ = ("_blob", "_gid", "_mask", "_off", "_table")

    def __init__(
        self, ids_bin: memoryview, ids_off: memoryview, gids: memoryview, table: memoryview
    ) -> None:
        """The views are the mapped files, already cast (offsets uint64, gids and slots
        uint32). Raises ValueError when the table cannot belong to these ids."""
        self._blob = ids_bin
        self._off = ids_off
        self._gid = gids
        self._table = table
        count = len(gids)
        if len(table) != table_size(count) or len(ids_off) != count + 1:
            raise ValueError(f"{len(table)} slots for {count} ids")
        if count and int(np.frombuffer(table, dtype="<u4").max()) > count:
            raise ValueError("a slot names an id that is not there")
        self._mask = len(table) - 1

    def get(self, article_id: str) -> int | None:
        key = article_id.encode("utf-8", "surrogatepass")
        table, mask, off = self._table, self._mask, self._off
        slot = _hash(key) & mask
        while True:
            i = table[slot]
            if not i:
                return None
            i -= 1
            if self._blob[off[i] : off[i + 1]] == key:
                return int(self._gid[i])
            slot = (slot + 1) & mask


class SortedIds(SortedBytes):
    """Ids sorted bytewise (ids.bin, or a story index's stories.bin) with the gid of each
    (ids.gid, stories.gid): item i is the i-th id, for `bisect`."""

    __slots__ = ("_gid",)

    def __init__(
        self, ids_bin: memoryview | bytes, ids_off: memoryview | bytes, gids: memoryview | bytes
    ) -> None:
        super().__init__(memoryview(ids_bin), memoryview(ids_off).cast(fmt.OFFSET_TYPECODE))
        self._gid = memoryview(gids).cast(fmt.POSITION_TYPECODE)

    def gids(self) -> memoryview:
        return self._gid

    def get(self, article_id: str) -> int | None:
        """The gid of the article with this id, or None."""
        i = self.index(article_id.encode("utf-8", "surrogatepass"))
        return None if i < 0 else self._gid[i]
