"""Ordering of search matches after filtering (docs/api.md §7).

Relevance is app.search.searcher.rank, applied to the filtered output of `scored_matches`.
`newest` and `oldest` order matches by list position and by published time.
"""

from __future__ import annotations

import numpy as np


def newest(pos: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """List order is newest first (published desc, id asc): ascending positions."""
    want = offset + limit
    if want < pos.size:
        pos = np.partition(pos, want - 1)[:want]
    return np.sort(pos)[offset:want]


def oldest(pos: np.ndarray, published: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """Published asc, then id asc (= list position asc among equal times)."""
    return pos[np.lexsort((pos, published[pos]))][offset : offset + limit]
