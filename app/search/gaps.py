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


def decode_gaps(data: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of encode_gaps for consecutive postings of nbytes bytes each (every one at
    least 1): (positions as int64, positions per posting)."""
    if not data.size:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if int(data.max()) < 0x80:
        # Every value fits one byte (gaps under 128: most postings): no varint to undo.
        values = data.astype(np.int64)
        per_posting = nbytes.astype(np.int64)
    else:
        values, per_posting = _varints(data, nbytes)
    # Positions: running sums of the gaps, restarted at each posting.
    total = np.cumsum(values)
    first = np.cumsum(per_posting) - per_posting
    total -= np.repeat(total[first] - values[first], per_posting)
    return total, per_posting


def _varints(data: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(LEB128 values, values per posting) of consecutive postings of nbytes bytes each."""
    b = data.astype(np.int64)
    last = b < 0x80  # a value's last byte
    value_of = np.cumsum(last) - last  # value number of each byte
    begins = np.flatnonzero(np.concatenate(([True], last[:-1])))
    k = np.arange(b.size, dtype=np.int64) - begins[value_of]
    values = np.add.reduceat((b & 0x7F) << (7 * k), begins)
    per_posting = np.add.reduceat(last.astype(np.int64), np.cumsum(nbytes) - nbytes)
    return values, per_posting
