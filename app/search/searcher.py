"""Request-path search over the memory-mapped index written by app.search.indexer.

Construction only casts memoryviews, wraps the posting arrays in zero-copy numpy views and
reads the small JSON meta file, so workers share the mapped pages and start in microseconds.
A query is analysed, each term is found by binary search, and postings are intersected in
numpy starting from the rarest term (binary search of the candidates, or one bincount pass
when they are dense); 3+-character CJK runs are verified per candidate; only the candidates
that can reach the requested page are sorted. Results are identical to a sequential Python
implementation (tests/search/test_equivalence.py).
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left
from collections.abc import Mapping
from itertools import repeat
from operator import is_not

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
            ndocs, nwords, nuni, nbi, npostings, text_units = (
                int(meta[k])
                for k in ("docs", "words", "unigrams", "bigrams", "postings", "text_units")
            )
            doc_type = str(meta["doc_type"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"search index for {language}: incomplete meta: {exc}") from exc
        if doc_type not in ("H", "I"):
            raise ValueError(f"search index for {language}: bad doc_type {doc_type!r}")

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
        self._textoff = self._array(files, layout.TEXTOFF, "I", ndocs + 1)
        self._text = files[layout.TEXT]
        self._np_textoff = np.frombuffer(self._textoff, dtype="<u4")
        # Spot checks of the array contents (cheap: no full scan at start-up).
        if self._ptr[0] != 0 or self._ptr[-1] != npostings:
            raise ValueError(f"search index for {language}: posting offsets do not match")
        if self._wordoff[0] != 0 or self._wordoff[-1] != len(self._words):
            raise ValueError(f"search index for {language}: word offsets do not match")
        if self._textoff[0] != 0 or self._textoff[-1] != text_units:
            raise ValueError(f"search index for {language}: text offsets do not match")
        if len(self._text) != 2 * text_units:
            raise ValueError(f"search index for {language}: text size does not match")
        if npostings and max(self._docs[0], self._docs[-1]) >= ndocs:
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

    def _with_sequences(self, cand: np.ndarray, phrases: tuple[str, ...]) -> np.ndarray:
        """Mask of the candidates whose folded CJK text contains every phrase: one regex
        search per candidate (a C-level map, no Python frame), stopping at the first match."""
        text = self._text
        doc = cand.astype(np.intp)
        mask = np.ones(cand.size, dtype=bool)
        for phrase in phrases:
            search = re.compile(re.escape(phrase.encode("utf-16-le"))).search
            starts = (self._np_textoff[doc].astype(np.int64) * 2).tolist()
            ends = (self._np_textoff[doc + 1].astype(np.int64) * 2).tolist()
            found = list(map(search, repeat(text), starts, ends))
            keep = np.fromiter(map(is_not, found, repeat(None)), dtype=bool, count=len(found))
            # UTF-16 code units are 2 bytes: only an even offset is a real character match.
            # An odd-offset match is rare; it may overlap a real one, so search on from there.
            for i in np.flatnonzero(keep).tolist():
                m = found[i]
                while m is not None and m.start() & 1:
                    m = search(text, m.start() + 1, ends[i])
                keep[i] = m is not None
            mask[mask] = keep
            doc = doc[keep]
            if not doc.size:
                break
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
        if min(term_ids) < 0:
            return 0, []
        ptr = self._ptr
        ranges = sorted({(ptr[t], ptr[t + 1]) for t in term_ids}, key=lambda r: (r[1] - r[0], r))
        cand, acc = self._intersect(ranges)
        if not cand.size:
            return 0, []
        if terms.phrases:
            keep = self._with_sequences(cand, terms.phrases)
            cand = cand[keep]
            acc = acc[keep]

        total = int(cand.size)
        if offset >= total or limit <= 0:
            return total, []
        want = offset + limit
        neg = -acc
        if want < total:
            # Keep only the candidates that can reach the first `want` rows, with every tie at
            # the boundary. (np.sort, not np.partition: introselect is pathologically slow on
            # the many equal scores of real postings.)
            top = neg <= np.sort(neg)[want - 1]
            cand = cand[top]
            neg = neg[top]
        order = np.lexsort((cand, neg))[offset:want]
        return total, cand[order].tolist()

    def _intersect(self, ranges: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """Documents in every posting range (ascending) and their float64 score sums, added
        in `ranges` order (rarest first), exactly like a sequential Python sum."""
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
        cand = docs[lo:hi]
        acc = scores[lo:hi].astype(np.float64)
        for lo, hi in ranges[1:]:
            other = docs[lo:hi]
            idx = np.searchsorted(other, cand)
            np.minimum(idx, hi - lo - 1, out=idx)
            hit = other[idx] == cand
            cand = cand[hit]
            if not cand.size:
                break
            acc = acc[hit] + scores[lo + idx[hit]]
        return cand, acc
