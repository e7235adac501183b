"""Request-path search over the memory-mapped index written by app.search.indexer.

Construction only casts memoryviews, wraps the posting arrays in zero-copy numpy views and
reads the small JSON meta file, so workers share the mapped pages and start in microseconds.
A query is analysed, each term is found by binary search, and postings are intersected in
numpy starting from the rarest term (binary search of the candidates, or one bincount pass
when they are dense); the trigram postings of a 3+-character CJK run filter the same way, and
a 4+-character run is proven on the remaining candidates from trigram positions; only the
candidates that can reach the requested page are sorted. Results are identical to a
sequential Python implementation that checks runs in each document's own text
(tests/search/test_equivalence.py).
"""

from __future__ import annotations

import sys
from bisect import bisect_left
from collections.abc import Mapping

import numpy as np
import orjson

from app.search import layout
from app.search.analyzers import ANALYZER_VERSION, get_analyzer

# Relative cost of binary-searching one candidate in a posting list versus counting one
# posting (or clearing one document slot) in the dense bincount pass; see _intersect.
_PROBE_COST = 5


class Searcher:
    def __init__(self, language: str, files: Mapping[str, memoryview]) -> None:
        """files: the "search.*" files of that language, as read-only memoryviews."""
        if sys.byteorder != "little":
            raise ValueError("search index arrays are little-endian; this host is not")
        missing = [name for name in layout.ALL_FILES if name not in files]
        if missing:
            raise ValueError(f"search index for {language}: missing files {missing}")
        try:
            meta = orjson.loads(bytes(files[layout.META]))
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"search index for {language}: unreadable meta: {exc}") from exc
        if not isinstance(meta, dict):
            raise ValueError(f"search index for {language}: meta is not an object")
        if meta.get("format") != layout.FORMAT_VERSION:
            raise ValueError(
                f"search index for {language}: format {meta.get('format')!r}, "
                f"this server reads format {layout.FORMAT_VERSION}"
            )
        if meta.get("analyzer") != ANALYZER_VERSION:
            raise ValueError(
                f"search index for {language}: built with analyser {meta.get('analyzer')!r}, "
                f"this server analyses queries with {ANALYZER_VERSION}: rebuild the bundle"
            )
        if meta.get("language") != language:
            raise ValueError(
                f"search index for {language}: built for language {meta.get('language')!r}"
            )
        try:
            ndocs, nwords, nuni, nbi, npostings, ntri, ntri_postings, ntri_positions = (
                int(meta[k])
                for k in (
                    "docs",
                    "words",
                    "unigrams",
                    "bigrams",
                    "postings",
                    "trigrams",
                    "trigram_postings",
                    "trigram_positions",
                )
            )
            doc_type, pos_type = str(meta["doc_type"]), str(meta["pos_type"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"search index for {language}: incomplete meta: {exc}") from exc
        if doc_type not in ("H", "I") or pos_type not in ("H", "I"):
            raise ValueError(f"search index for {language}: bad doc_type or pos_type")

        self.language = language
        self.ndocs = ndocs
        self._analyzer = get_analyzer(language)
        self._nwords = nwords
        self._words = files[layout.WORDS]
        self._wordoff = self._array(files, layout.WORDOFF, "I", nwords + 1)
        self._unigrams = self._array(files, layout.UNIGRAMS, "I", nuni)
        self._bigrams = self._array(files, layout.BIGRAMS, "Q", nbi)
        self._ptr = self._array(files, layout.PTR, "I", nwords + nuni + nbi + 1)
        self._docs = self._array(files, layout.DOCS, doc_type, npostings)
        self._scores = self._array(files, layout.SCORES, "f", npostings)
        # Zero-copy numpy views of the same mapped pages, for vectorised intersection.
        self._np_docs = np.frombuffer(self._docs, dtype="<u2" if doc_type == "H" else "<u4")
        self._np_scores = np.frombuffer(self._scores, dtype="<f4")
        self._trigrams = self._array(files, layout.TRIGRAMS, "Q", ntri)
        self._triptr = self._array(files, layout.TRIPTR, "I", ntri + 1)
        tridocs = self._array(files, layout.TRIDOCS, doc_type, ntri_postings)
        self._np_tridocs = np.frombuffer(tridocs, dtype=self._np_docs.dtype)
        triposoff = self._array(files, layout.TRIPOSOFF, "I", ntri_postings + 1)
        self._np_triposoff = np.frombuffer(triposoff, dtype="<u4")
        tripos = self._array(files, layout.TRIPOS, pos_type, ntri_positions)
        self._np_tripos = np.frombuffer(tripos, dtype="<u2" if pos_type == "H" else "<u4")
        # Spot checks of the array contents (cheap: no full scan at start-up).
        if self._ptr[0] != 0 or self._ptr[-1] != npostings:
            raise ValueError(f"search index for {language}: posting offsets do not match")
        if self._triptr[0] != 0 or self._triptr[-1] != ntri_postings:
            raise ValueError(f"search index for {language}: trigram offsets do not match")
        if self._wordoff[0] != 0 or self._wordoff[-1] != len(self._words):
            raise ValueError(f"search index for {language}: word offsets do not match")
        if triposoff[0] != 0 or triposoff[-1] != ntri_positions:
            raise ValueError(f"search index for {language}: position offsets do not match")
        if npostings and max(self._docs[0], self._docs[-1]) >= ndocs:
            raise ValueError(f"search index for {language}: document number out of range")
        if ntri_postings and max(tridocs[0], tridocs[-1]) >= ndocs:
            raise ValueError(f"search index for {language}: document number out of range")

    @staticmethod
    def _array(files: Mapping[str, memoryview], name: str, fmt: str, count: int) -> memoryview:
        view = files[name]
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        size = {"H": 2, "I": 4, "Q": 8, "f": 4}[fmt]
        if len(view) != count * size:
            raise ValueError(f"{name}: {len(view)} bytes, expected {count} entries of {size} bytes")
        return view.cast(fmt)

    def _word_term(self, word: bytes) -> int:
        """Term number of a stemmed word, or -1."""
        words, off = self._words, self._wordoff
        lo, hi = 0, self._nwords
        while lo < hi:
            mid = (lo + hi) // 2
            if words[off[mid] : off[mid + 1]].tobytes() < word:
                lo = mid + 1
            else:
                hi = mid
        if lo < self._nwords and words[off[lo] : off[lo + 1]] == word:
            return lo
        return -1

    @staticmethod
    def _find(keys: memoryview, key: int, first_term: int) -> int:
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            return first_term + i
        return -1

    def _phrase_mask(self, cand: np.ndarray, covers: list[tuple[int, int]]) -> np.ndarray:
        """Mask of the candidates where every (trigram term, offset) of ``covers`` occurs at
        its offset from one start position, i.e. where the run they cover occurs. Every
        candidate is in each of those trigrams' postings already."""
        tridocs, triptr = self._np_tridocs, self._triptr
        shift = covers[-1][1]  # keeps ``position - offset + shift`` non-negative
        rank = np.arange(cand.size, dtype=np.int64) << 32
        starts = np.zeros(0, dtype=np.int64)  # (candidate rank << 32) + start + shift
        for n, (term, offset) in enumerate(covers):
            lo, hi = triptr[term], triptr[term + 1]
            j = np.searchsorted(tridocs[lo:hi], cand) + lo
            first, stop = self._np_triposoff[j], self._np_triposoff[j + 1]
            counts = (stop - first).astype(np.int64)
            at = np.repeat(first.astype(np.int64) - (np.cumsum(counts) - counts), counts)
            at += np.arange(at.size, dtype=np.int64)
            # Ascending: ranks follow the candidates, positions ascend within a posting.
            keys = np.repeat(rank, counts)
            keys += self._np_tripos[at]
            keys += shift - offset
            if n == 0:
                starts = keys
            else:
                # Both sorted and duplicate-free: a stable sort (timsort) merges the two runs
                # in linear time, and the equal neighbours are the intersection: measured
                # 1.7x faster than binary-searching tens of thousands of keys.
                both = np.concatenate((starts, keys))
                both.sort(kind="stable")
                starts = both[1:][both[1:] == both[:-1]]
            if not starts.size:
                break
        mask = np.zeros(cand.size, dtype=bool)
        mask[starts >> 32] = True
        return mask

    def search(self, query: str, offset: int, limit: int) -> tuple[int, list[int]]:
        """Returns (total matching docs, doc positions of rows offset..offset+limit-1), by
        relevance desc then position asc. Every query term must match (AND)."""
        terms = self._analyzer.analyze_query(query)
        if terms.empty:
            return 0, []
        term_ids = [self._word_term(w.encode("utf-8")) for w in terms.words]
        first_bigram = self._nwords + len(self._unigrams)
        term_ids += [self._find(self._unigrams, cp, self._nwords) for cp in terms.unigrams]
        term_ids += [self._find(self._bigrams, key, first_bigram) for key in terms.bigrams]
        trigram_ids = {key: self._find(self._trigrams, key, 0) for key in terms.trigrams}
        if min(term_ids) < 0 or min(trigram_ids.values(), default=0) < 0:
            return 0, []
        ptr, triptr = self._ptr, self._triptr
        ranges = sorted({(ptr[t], ptr[t + 1]) for t in term_ids}, key=lambda r: (r[1] - r[0], r))
        filters = sorted(
            {(triptr[t], triptr[t + 1]) for t in trigram_ids.values()}, key=lambda r: r[1] - r[0]
        )
        cand, acc = self._intersect(ranges, filters)
        if not cand.size:
            return 0, []
        for phrase in terms.phrases:
            keep = self._phrase_mask(cand, [(trigram_ids[key], at) for key, at in phrase])
            cand = cand[keep]
            acc = acc[keep]
            if not cand.size:
                return 0, []

        total = int(cand.size)
        if offset >= total or limit <= 0:
            return total, []
        want = offset + limit
        neg = -acc
        if want < total:
            # Keep only the candidates that can reach the first `want` rows, with every tie at
            # the boundary.
            top = neg <= _kth_smallest(neg, want)
            cand = cand[top]
            neg = neg[top]
        order = np.lexsort((cand, neg))[offset:want]
        return total, cand[order].tolist()

    def _intersect(
        self, ranges: list[tuple[int, int]], filters: list[tuple[int, int]]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Documents in every posting range and every trigram range (ascending, both lists
        sorted by size), and their float64 score sums, added in `ranges` order (rarest
        first), exactly like a sequential Python sum."""
        lo, hi = ranges[0]
        if filters:
            # A trigram's documents are a subset of its bigrams': usually the rarest list.
            # Both lists come sorted by size, so [0] is the rarest of each kind.
            tlo, thi = filters[0]
            if thi - tlo < hi - lo:
                return self._probe(self._np_tridocs[tlo:thi], ranges, filters[1:])
        cand, acc = self._scored(ranges)
        return self._probe(cand, [], filters, acc)

    def _probe(
        self,
        cand: np.ndarray,
        ranges: list[tuple[int, int]],
        filters: list[tuple[int, int]],
        acc: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Keeps the candidates found in every filter range (binary search), then in every
        scored range, adding its scores to acc in order."""
        if acc is None:
            acc = np.zeros(cand.size, dtype=np.float64)
        for lo, hi in filters:
            if not cand.size:
                break
            hit, _ = _lookup(self._np_tridocs[lo:hi], cand)
            cand, acc = cand[hit], acc[hit]
        for lo, hi in ranges:
            if not cand.size:
                break
            hit, idx = _lookup(self._np_docs[lo:hi], cand)
            cand = cand[hit]
            acc = acc[hit] + self._np_scores[lo + idx[hit]]
        return cand, acc

    def _scored(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Intersection of the scored ranges alone (see _intersect)."""
        docs, scores = self._np_docs, self._np_scores
        lo, hi = ranges[0]
        sizes = sum(end - start for start, end in ranges)
        if (hi - lo) * (len(ranges) - 1) * _PROBE_COST > sizes + self.ndocs // 2:
            # Dense candidates: one counting pass over all the postings beats binary search.
            # bincount adds the weights sequentially, so the sums are the same.
            all_docs = np.concatenate([docs[a:b] for a, b in ranges])
            all_scores = np.concatenate([scores[a:b] for a, b in ranges])
            counts = np.bincount(all_docs, minlength=self.ndocs)
            cand = np.flatnonzero(counts == len(ranges))
            sums = np.bincount(all_docs, weights=all_scores, minlength=self.ndocs)
            return cand, sums[cand]
        # Sparse: binary-search each candidate of the rarest list in the next lists.
        return self._probe(docs[lo:hi], ranges[1:], [], scores[lo:hi].astype(np.float64))


def _lookup(postings: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the candidates found in a non-empty sorted posting list, their indexes)."""
    idx = np.minimum(np.searchsorted(postings, cand), postings.size - 1)
    return postings[idx] == cand, idx


def _kth_smallest(values: np.ndarray, k: int) -> float:
    """The k-th smallest value (k >= 1), exactly, without sorting all of a large array.

    The k-th smallest of an evenly spread sample of at least 8k values bounds the answer from
    above, and only about 1/8 of the values pass that bound, so the final sort is small.
    (np.partition is no help: its introselect was slower than a full sort on these arrays,
    which hold many equal scores.)
    """
    step = values.size // (8 * k)
    if step >= 2:
        values = values[values <= np.sort(values[::step])[k - 1]]
    return float(np.sort(values)[k - 1])
