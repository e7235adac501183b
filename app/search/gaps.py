"""Word positions as varint-coded gaps (search.wordpos, app/search/layout.py).

Written by the indexer, copied byte for byte by segment merges (a posting's gaps depend on
its own document only), decoded by the Searcher for the candidates of a phrase.
"""

from __future__ import annotations

import numpy as np


def encode_gaps(npos: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Word positions, ascending per posting (npos of them each) -> (bytes per posting, uint8
    bytes): each posting's first position, then the gaps between its positions, as LEB128
    varints (7 bits a byte, high bit set on every byte but a value's last). Most gaps are
    under 128, so a position costs about 1.1 bytes instead of 2."""
    if not npos.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint8)
    values = pos.astype(np.int64)
    starts = np.cumsum(npos) - npos
    gaps = np.diff(values, prepend=0)
    gaps[starts] = values[starts]
    width = np.ones(gaps.size, dtype=np.int64)
    for bits in (7, 14, 21, 28):
        width += gaps >= 1 << bits
    k = np.arange(int(width.sum()), dtype=np.int64) - np.repeat(np.cumsum(width) - width, width)
    out = (np.repeat(gaps, width) >> (7 * k)) & 0x7F
    out[k < np.repeat(width, width) - 1] |= 0x80
    return np.add.reduceat(width, starts), out.astype(np.uint8)


def decode_gaps(
    data: np.ndarray, nbytes: np.ndarray, offsets: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of encode_gaps for consecutive postings of nbytes bytes each (every one at
    least 1): (positions as int64, positions per posting), each posting's positions plus its
    entry of ``offsets`` when given (the phrase proof's keys, made in the same pass)."""
    if not data.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    more = data >= 0x80  # a value's byte that is not its last
    if not more.any():
        # Every value fits one byte (gaps under 128: most postings): no varint to undo.
        values = data.astype(np.int64)
        per_posting = nbytes.astype(np.int64)
    else:
        values, per_posting = _varints(data, nbytes, more)
    # Positions: running sums of the gaps, restarted at each posting (at its offset): one
    # cumsum, after each posting's first gap takes away what the postings before it added.
    first = np.cumsum(per_posting) - per_posting
    start = np.zeros(first.size, dtype=np.int64) if offsets is None else offsets.astype(np.int64)
    adjust = start.copy()
    if first.size > 1:
        adjust[1:] -= start[:-1] + np.add.reduceat(values, first)[:-1]
    values[first] += adjust
    return np.cumsum(values), per_posting


def _varints(
    data: np.ndarray, nbytes: np.ndarray, more: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(LEB128 values, values per posting) of consecutive postings of nbytes bytes each;
    ``more`` flags the bytes that are not a value's last. Most values are one byte, so each
    value starts as its last byte and only the few longer ones take their other bytes, from
    the last to the first (little-endian groups of 7 bits)."""
    ends = np.flatnonzero(~more)  # each value's last byte
    low = data.astype(np.int64) & 0x7F
    values = low[ends]
    begins = np.empty_like(ends)
    begins[0] = 0
    begins[1:] = ends[:-1] + 1
    width = ends - begins + 1
    longer = np.flatnonzero(width > 1)
    k = 1
    while longer.size:
        at = ends[longer]
        values[longer] = (values[longer] << 7) | low[at - k]
        k += 1
        longer = longer[width[longer] > k]
    last_count = np.cumsum(~more)
    per_posting = np.diff(last_count[np.cumsum(nbytes) - 1], prepend=0)
    return values, per_posting
