"""Binary search over byte strings stored sorted, end to end, with an offsets array.

The bundle's article ids (ids.bin + ids.off) and the search index's word list are both
laid out this way; both look keys up through this one class.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


class SortedBytes:
    """Sequence view for `bisect`: item i is the i-th string, `blob[off[i]:off[i + 1]]`."""

    __slots__ = ("_blob", "_off")

    def __init__(self, blob: memoryview, offsets: Sequence[int]) -> None:
        self._blob = blob
        self._off = offsets

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i: int) -> bytes:
        return self._blob[self._off[i] : self._off[i + 1]].tobytes()

    def index(self, key: bytes) -> int:
        """Position of `key`, or -1 when it is not there."""
        i = bisect.bisect_left(self, key)
        return i if i < len(self) and self[i] == key else -1
