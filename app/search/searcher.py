"""Request-path search over the memory-mapped index written by app.search.indexer.

Construction only casts memoryviews and reads the small JSON meta file, so workers share
the mapped pages and start in microseconds. A query is analysed, each term is found by
binary search, and postings are intersected starting from the rarest term, so the work is
bounded by the shortest posting list times the number of terms, never by the corpus size.
"""

from __future__ import annotations

import heapq
import re
import sys
from bisect import bisect_left
from collections.abc import Mapping

import orjson

from app.search import layout
from app.search.analyzers import ANALYZER_VERSION, get_analyzer

# Probe a long posting list with binary searches while the candidates are this many times
# fewer than its entries; otherwise materialising it as a dict once is cheaper.
_PROBE_RATIO = 16


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
        self._textoff = self._array(files, layout.TEXTOFF, "I", ndocs + 1)
        self._text = files[layout.TEXT]
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

    def _has_sequences(self, doc: int, patterns: list[re.Pattern[bytes]]) -> bool:
        start = 2 * self._textoff[doc]
        end = 2 * self._textoff[doc + 1]
        for pattern in patterns:
            # UTF-16 code units are 2 bytes: only an even offset is a real character match.
            if not any(m.start() % 2 == 0 for m in pattern.finditer(self._text, start, end)):
                return False
        return True

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
        ptr, docs, scores = self._ptr, self._docs, self._scores
        ranges = sorted({(ptr[t], ptr[t + 1]) for t in term_ids}, key=lambda r: (r[1] - r[0], r))

        lo, hi = ranges[0]
        acc: dict[int, float] = dict(zip(docs[lo:hi], scores[lo:hi], strict=True))
        for lo, hi in ranges[1:]:
            if len(acc) * _PROBE_RATIO < hi - lo:
                merged: dict[int, float] = {}
                for doc, score in acc.items():
                    i = bisect_left(docs, doc, lo, hi)
                    if i < hi and docs[i] == doc:
                        merged[doc] = score + scores[i]
            else:
                other = dict(zip(docs[lo:hi], scores[lo:hi], strict=True))
                merged = {doc: score + other[doc] for doc, score in acc.items() if doc in other}
            acc = merged
            if not acc:
                return 0, []

        if terms.phrases:
            patterns = [re.compile(re.escape(p.encode("utf-16-le"))) for p in terms.phrases]
            acc = {doc: s for doc, s in acc.items() if self._has_sequences(doc, patterns)}

        total = len(acc)
        if offset >= total or limit <= 0:
            return total, []
        want = offset + limit
        if want * 4 < total:
            top = heapq.nsmallest(want, acc.items(), key=_rank_key)
        else:
            top = sorted(acc.items(), key=_rank_key)[:want]
        return total, [doc for doc, _ in top[offset:]]


def _rank_key(item: tuple[int, float]) -> tuple[float, int]:
    return (-item[1], item[0])
