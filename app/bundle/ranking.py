"""Ordering of search matches after filtering (docs/api.md §7).

`rank` is the relevance order of app.search.searcher.search, applied to the filtered output
of `scored_matches`: title-term count, then BM25F score (descending), then list position.
`newest` and `oldest` order matches by list position and by published time.
"""

from __future__ import annotations

import numpy as np

from app.search.searcher import _TITLE_WEIGHT, _kth_smallest


def rank(
    pos: np.ndarray, acc: np.ndarray, titles: np.ndarray, offset: int, limit: int
) -> np.ndarray:
    """List positions of rows offset..offset+limit-1 in relevance order."""
    total = int(pos.size)
    if offset >= total or limit <= 0:
        return pos[:0]
    want = offset + limit
    if want < total:
        # Only candidates that can reach the first `want` rows, with every tie at the boundary.
        neg = -(titles * _TITLE_WEIGHT + acc)
        top = neg <= _kth_smallest(neg, want)
        pos, acc, titles = pos[top], acc[top], titles[top]
    return pos[np.lexsort((pos, -acc, -titles))[offset:want]]


def newest(pos: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """List order is newest first (published desc, id asc): ascending positions."""
    want = offset + limit
    if want < pos.size:
        pos = np.partition(pos, want - 1)[:want]
    return np.sort(pos)[offset:want]


def oldest(pos: np.ndarray, published: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """Published asc, then id asc (= list position asc among equal times)."""
    return pos[np.lexsort((pos, published[pos]))][offset : offset + limit]
