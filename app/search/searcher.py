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

Queries with syntax (app/search/query.py: phrases, exclusions, OR groups) take the same
steps per conjunctive part; word phrases are proven from word positions the way CJK runs are
from trigram positions (docs/search.md, "Search syntax"), as sorted keys (document << 32) +
position, reading positions only for the candidates still standing (a frequent word's keys
are kept whole), cheapest proof first; OR alternatives and exclusions run on the documents
still undecided (docs/search.md, "Cost model").
"""

from __future__ import annotations

import math
import sys
import threading
from bisect import bisect_left
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

import numpy as np

from app.search import layout
from app.search.analyzers import (
    UNIGRAM_SHIFT,
    Analyzer,
    QueryTerms,
    get_analyzer,
    listed_in,
)
from app.search.gaps import decode_gaps
from app.search.query import CompiledQuery, Part, compile_query
from app.sorted_bytes import SortedBytes

# Relative cost of binary-searching one candidate in a posting list versus counting one
# posting (or clearing one document slot) in the dense bincount pass; see _intersect.
_PROBE_COST = 5
_NONE = np.zeros(0, dtype=np.int64)
# A word's decoded positions are kept (per index and worker) when they take at least
# _KEEP_DECODED bytes, within _DECODED_BYTES of them an index (at most 8 x as many bytes
# decoded: int64), the first kept leaving first: a phrase's cost was mostly decoding the
# positions of its frequent words.
_KEEP_DECODED = 4096
_DECODED_BYTES = 2 << 20
# Candidates this few are probed and scored one document at a time, by binary search on the
# mapped arrays: a numpy call costs about a microsecond whatever its size, a bisect a tenth
# of that. A long CJK query typically leaves one candidate after its rarest trigram and then
# has twenty more ranges to check (docs/benchmarks.md, "Few candidates").
_FEW = 8
# Scoring scatters each posting list into a table of every document and gathers the
# candidates from it once they are more than 1/_DENSE of the documents; below, a binary
# search per candidate costs less than the scatter.
_DENSE = 8


class Searcher:
    def __init__(self, language: str, files: Mapping[str, memoryview]) -> None:
        """files: the "search.*" files of that language, as read-only memoryviews."""
        if sys.byteorder != "little":
            raise ValueError("search index arrays are little-endian; this host is not")
        missing = [name for name in layout.ALL_FILES if name not in files]
        if missing:
            raise ValueError(f"search index for {language}: missing files {missing}")
        try:
            meta = layout.SearchMeta.parse(bytes(files[layout.META]), language)
        except ValueError as exc:
            raise ValueError(f"search index for {language}: {exc}") from exc
        ndocs, nwords, nuni, nbi, npostings = (
            meta.docs,
            meta.words,
            meta.unigrams,
            meta.bigrams,
            meta.postings,
        )
        ntri, ntri_postings, ntri_positions = (
            meta.trigrams,
            meta.trigram_postings,
            meta.trigram_positions,
        )
        doc_type, pos_type, count_type = meta.doc_type, meta.pos_type, meta.count_type
        nword_positions, wcount_type = meta.word_positions, meta.wcount_type
        pair_list = meta.pair_words

        self.language = language
        self.ndocs = ndocs
        if len(set(pair_list)) != len(pair_list) or len(pair_list) >= 1 << UNIGRAM_SHIFT:
            raise ValueError(f"search index for {language}: bad pair words")
        # Queries compile against this index's own pair words (app/search/pair_words.py).
        self.analyzer: Analyzer = get_analyzer(language, pair_list)
        # Number of a pair word in pair keys -> its stem (empty: no pair postings), and
        # -> its posting range here, found on first use (_paired).
        self._pair_stems = {i: stem for stem, i in self.analyzer.frequent.items()}
        self._pair_ranges: dict[int, tuple[int, int]] = {}
        self._nwords = nwords
        self._words = files[layout.WORDS]
        self._wordoff = self._array(files, layout.WORDOFF, "I", nwords + 1)
        self._word_index = SortedBytes(self._words, self._wordoff)
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
        self._tridocs = self._array(files, layout.TRIDOCS, doc_type, ntri_postings)
        self._np_tridocs = np.frombuffer(self._tridocs, dtype=self._np_docs.dtype)
        self._tricount = self._array(files, layout.TRICOUNT, count_type, ntri_postings)
        self._np_tricount = np.frombuffer(self._tricount, dtype=layout.NUMPY_TYPES[count_type])
        self._tripbase = self._array(files, layout.TRIPBASE, "I", ntri + 1)
        self._tripos = self._array(files, layout.TRIPOS, pos_type, ntri_positions)
        self._np_tripos = np.frombuffer(self._tripos, dtype="<u2" if pos_type == "H" else "<u4")
        # Word positions: per word posting (the first ptr[nwords] postings) a byte count, per
        # word term a base, and the bytes: the posting's positions as varint-coded gaps.
        nword_postings = self._ptr[nwords]
        wordcount = self._array(files, layout.WORDCOUNT, wcount_type, nword_postings)
        self._np_wordcount = np.frombuffer(wordcount, dtype=layout.NUMPY_TYPES[wcount_type])
        self._wordpbase = self._array(files, layout.WORDPBASE, "I", nwords + 1)
        wordpos = self._array(files, layout.WORDPOS, "B", nword_positions)
        self._np_wordpos = np.frombuffer(wordpos, dtype=np.uint8)  # varint gaps (indexer)
        # Position keys of frequent words, kept for the next phrase (_word_keys).
        self._decoded: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        self._decoded_size = 0
        self._decoded_lock = threading.Lock()
        # Spot checks of the array contents (cheap: no full scan at start-up).
        if self._wordpbase[0] != 0 or self._wordpbase[-1] != nword_positions:
            raise ValueError(f"search index for {language}: word position offsets do not match")
        if self._ptr[0] != 0 or self._ptr[-1] != npostings:
            raise ValueError(f"search index for {language}: posting offsets do not match")
        if self._triptr[0] != 0 or self._triptr[-1] != ntri_postings:
            raise ValueError(f"search index for {language}: trigram offsets do not match")
        if self._wordoff[0] != 0 or self._wordoff[-1] != len(self._words):
            raise ValueError(f"search index for {language}: word offsets do not match")
        if self._tripbase[0] != 0 or self._tripbase[-1] != ntri_positions:
            raise ValueError(f"search index for {language}: position offsets do not match")
        if npostings and max(self._docs[0], self._docs[-1]) >= ndocs:
            raise ValueError(f"search index for {language}: document number out of range")
        if ntri_postings and max(self._tridocs[0], self._tridocs[-1]) >= ndocs:
            raise ValueError(f"search index for {language}: document number out of range")

    @staticmethod
    def _array(files: Mapping[str, memoryview], name: str, fmt: str, count: int) -> memoryview:
        view = files[name]
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
        size = {"B": 1, "H": 2, "I": 4, "Q": 8, "f": 4}[fmt]
        if len(view) != count * size:
            raise ValueError(f"{name}: {len(view)} bytes, expected {count} entries of {size} bytes")
        # typeshed accepts only literal formats; `fmt` is one of the keys above.
        return view.cast(fmt)  # type: ignore[call-overload]

    def _word_term(self, word: bytes) -> int:
        """Term number of a stemmed word, or -1."""
        return self._word_index.index(word)

    @staticmethod
    def _find(keys: memoryview, key: int, first_term: int) -> int:
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            return first_term + i
        return -1

    def lookup(self, terms: QueryTerms) -> Lookup:
        """This segment's posting ranges of the query's terms (empty for a term it lacks)."""
        term_ids = [self._word_term(w.encode("utf-8")) for w in terms.words]
        first_bigram = self._nwords + len(self._unigrams)
        term_ids += [self._find(self._unigrams, cp, self._nwords) for cp in terms.unigrams]
        term_ids += [self._find(self._bigrams, key, first_bigram) for key in terms.bigrams]
        trigram_ids = {key: self._find(self._trigrams, key, 0) for key in terms.trigrams}
        ptr = self._ptr
        ranges = [(ptr[t], ptr[t + 1]) if t >= 0 else (0, 0) for t in term_ids]
        complete = min(term_ids) >= 0 and min(trigram_ids.values(), default=0) >= 0
        return Lookup(ranges, trigram_ids, complete)

    def live_df(self, lookup: Lookup, deleted: np.ndarray) -> list[int]:
        """Documents per scored range, not counting the sorted local `deleted` documents."""
        df = [hi - lo for lo, hi in lookup.ranges]
        if deleted.size:
            for i, (lo, hi) in enumerate(lookup.ranges):
                if hi > lo:
                    hit, _ = _lookup(self._np_docs[lo:hi], deleted)
                    df[i] -= int(np.count_nonzero(hit))
        return df

    def matches(self, terms: QueryTerms, lookup: Lookup) -> np.ndarray:
        """Local documents (ascending) that hold every term, every 3+-character run."""
        ranges = sorted(set(lookup.ranges), key=lambda r: (r[1] - r[0], r))
        triptr = self._triptr
        filters = sorted(
            {(triptr[t], triptr[t + 1]) for t in lookup.trigram_ids.values()},
            key=lambda r: r[1] - r[0],
        )
        cand = self._intersect(ranges, filters)
        for phrase in terms.phrases:
            if not cand.size:
                break
            cand = cand[self._phrase_mask(cand, [(lookup.trigram_ids[k], at) for k, at in phrase])]
        return cand

    def score(
        self, cand: np.ndarray, lookup: Lookup, idf: list[float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(BM25F sums, title-term counts) of the candidates. Terms are added in query order
        whatever the segment, so a document's score is bit-for-bit the same in any layout."""
        if cand.size <= _FEW:
            return self._score_few(cand.tolist(), lookup, idf)
        acc = np.zeros(cand.size, dtype=np.float64)
        titles = np.zeros(cand.size, dtype=np.int64)
        # Many candidates: each posting list scattered into a table of all documents, the
        # candidates gathered from it (as score_any does), instead of a binary search each.
        # Every candidate holds every term, so each term's gather reads only what its own
        # scatter wrote: the table needs no clearing.
        table = np.empty(self.ndocs if cand.size * _DENSE > self.ndocs else 0, dtype=np.float32)
        for (lo, hi), weight in zip(lookup.ranges, idf, strict=True):
            if hi - lo == cand.size:
                stored = self._np_scores[lo:hi]  # every posting is a candidate: no search
            elif table.size:
                table[self._np_docs[lo:hi]] = self._np_scores[lo:hi]
                stored = table[cand]
            else:
                stored = self._np_scores[lo + np.searchsorted(self._np_docs[lo:hi], cand)]
            # weight * abs(stored) in float64, added: the same operations as _score_few.
            weighted = np.abs(stored, dtype=np.float64)
            weighted *= weight
            acc += weighted
            titles += stored < 0
        return acc, titles

    def _score_few(
        self, cand: list[int], lookup: Lookup, idf: list[float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """score, one candidate at a time: the same float64 operations in the same order
        (abs of the stored float32, times the weight, added term by term), so the same bits."""
        docs, scores = self._docs, self._scores
        acc = [0.0] * len(cand)
        titles = [0] * len(cand)
        for (lo, hi), weight in zip(lookup.ranges, idf, strict=True):
            for k, doc in enumerate(cand):
                stored = scores[bisect_left(docs, doc, lo, hi)]  # every candidate holds it
                acc[k] += weight * abs(stored)
                titles[k] += stored < 0
        return np.array(acc, dtype=np.float64), np.array(titles, dtype=np.int64)

    def score_any(
        self, cand: np.ndarray, lookup: Lookup, idf: list[float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Like score, for candidates that need not hold every term (OR groups): each
        document adds the terms it has, still in query order."""
        acc = np.zeros(cand.size, dtype=np.float64)
        titles = np.zeros(cand.size, dtype=np.int64)
        # Many candidates (an OR of common phrases): scatter each posting list into a table
        # of all documents and gather the candidates, instead of a binary search each.
        dense = cand.size * _DENSE > self.ndocs
        table = np.zeros(self.ndocs if dense else 0, dtype=np.float64)
        for (lo, hi), weight in zip(lookup.ranges, idf, strict=True):
            if hi == lo:
                continue
            if dense:
                # One scatter and one gather a term; the table is left all zeros again.
                docs = self._np_docs[lo:hi]
                table[docs] = self._np_scores[lo:hi]
                got = table[cand]  # 0.0 where absent: adds 0.0, as np.where below
                table[docs] = 0.0
                titles += got < 0
                np.abs(got, out=got)
                got *= weight
                acc += got
                continue
            hit, idx = _lookup(self._np_docs[lo:hi], cand)
            stored = self._np_scores[lo + idx]
            acc += np.where(hit, weight * np.abs(stored).astype(np.float64), 0.0)
            titles += hit & (stored < 0)
        return acc, titles

    def part_matches(
        self, part: Part, cand: np.ndarray | None = None, skip: np.ndarray | None = None
    ) -> np.ndarray:
        """Local documents (ascending) matching a conjunctive part, among cand if given (a
        subset of it) and not marked in ``skip`` (a mask of the documents already decided):
        postings first, then the proofs from positions, cheapest first, each on the
        documents still standing."""
        lookup = self.lookup(part.terms)
        phrases = [[self._word_term(w.encode("utf-8")) for w in p] for p in part.word_phrases]
        if not lookup.complete or any(min(p) < 0 for p in phrases):
            return _NONE
        if self._from_keys(part, phrases, lookup, cand):
            # Only phrases of words whose keys are kept: their proofs find the documents
            # themselves (holding the words is implied), then the given ones are kept.
            ordered = sorted(phrases, key=self._word_cost)
            found = self._word_phrase_docs(ordered[0], None)
            for terms in ordered[1:]:
                if not found.size:
                    return _NONE
                found = self._word_phrase_docs(terms, found)
            if cand is not None:
                found = found[_lookup(cand, found)[0]] if cand.size else _NONE
            return found if skip is None else found[~skip[found]]
        triptr = self._triptr
        # A pair term's documents hold both its words: their postings filter nothing more.
        ranges = sorted(set(lookup.ranges) - self._paired(lookup), key=lambda r: (r[1] - r[0], r))
        filters = sorted(
            {(triptr[t], triptr[t + 1]) for t in lookup.trigram_ids.values()},
            key=lambda r: (r[1] - r[0], r),
        )
        cand = (
            self._intersect(ranges, filters) if cand is None else self._probe(cand, ranges, filters)
        )
        if skip is not None and cand.size:
            cand = cand[~skip[cand]]
        # (cost, the proof's mask over the candidates): runs of trigrams, then word phrases;
        # the cheapest proof runs first.
        proofs: list[tuple[int, Callable[[np.ndarray], np.ndarray]]] = [
            (self._run_cost(covers), partial(self._phrase_mask, covers=covers))
            for covers in (
                [(lookup.trigram_ids[k], at) for k, at in phrase] for phrase in part.terms.phrases
            )
        ]
        proofs += [
            (self._word_cost(terms), partial(self._word_phrase_mask, terms=terms))
            for terms in phrases
        ]
        for _, prove in sorted(proofs, key=lambda p: p[0]):
            if not cand.size:
                break
            cand = cand[prove(cand)]
        return cand

    def _paired(self, lookup: Lookup) -> set[tuple[int, int]]:
        """Posting ranges of the pair words of the query's pair and near terms
        (app/search/analyzers.py pair_key, near_key): those terms' documents hold them."""
        found: set[tuple[int, int]] = set()
        if not self._pair_stems or self.analyzer.cjk:  # Korean pairs are of runs, not words
            return found
        for key in lookup.trigram_ids:
            found.update(self._pair_range(i) for i in listed_in(key))
        return found

    def _pair_range(self, i: int) -> tuple[int, int]:
        """Posting range of frequent word ``i`` (it occurs here: one of its pairs does)."""
        got = self._pair_ranges.get(i)
        if got is None:
            t = self._word_term(self._pair_stems[i].encode("utf-8"))
            got = self._pair_ranges[i] = (self._ptr[t], self._ptr[t + 1])
        return got

    def _from_keys(
        self, part: Part, phrases: list[list[int]], lookup: Lookup, cand: np.ndarray | None
    ) -> bool:
        """Whether a part is cheaper proven straight from its words' kept keys than from
        postings first: it holds word phrases and nothing else, the keys of each of their
        words are kept (or will be), and no few candidates are given (a rare word elsewhere
        in the query, or a late exclusion: then postings first, and positions for those
        candidates only)."""
        if not phrases or part.terms.phrases or lookup.trigram_ids:
            return False
        ptr, base = self._ptr, self._wordpbase
        words = {t for p in phrases for t in p}
        if {(ptr[t], ptr[t + 1]) for t in words} != set(lookup.ranges):
            return False
        if not all(_KEEP_DECODED <= base[t + 1] - base[t] <= _DECODED_BYTES for t in words):
            return False
        rarest = min(ptr[t + 1] - ptr[t] for t in words)
        return cand is None or cand.size * 4 >= rarest

    def _word_cost(self, terms: list[int]) -> int:
        """Position bytes of a word phrase's rarest word: what its proof reads at least."""
        base = self._wordpbase
        return min(base[t + 1] - base[t] for t in terms)

    def _run_cost(self, covers: list[tuple[int, int]]) -> int:
        base = self._tripbase
        return min(base[t + 1] - base[t] for t, _ in covers)

    def compiled_matches(self, query: CompiledQuery) -> np.ndarray:
        """Local documents (ascending) matching a query with syntax: the required part, then
        each OR group (a union) among those, minus each excluded part's matches.

        An OR group's parts run most deciding first, each only on the documents no earlier
        part matched; exclusions likewise on the candidates still standing."""
        cand: np.ndarray | None = None
        if query.required is not None:
            cand = self.part_matches(query.required)
        for group in query.any_of:
            if cand is not None and not cand.size:
                return cand
            found = np.zeros(self.ndocs, dtype=bool)
            for part in self._deciding_first(group):
                found[self.part_matches(part, cand, found)] = True
            cand = np.flatnonzero(found)
        if cand is None:
            return _NONE
        for part in self._deciding_first(query.excluded):
            if not cand.size:
                break
            hit = self.part_matches(part, cand)  # some of the candidates (part_matches)
            if hit.size:
                keep = np.ones(cand.size, dtype=bool)
                keep[np.searchsorted(cand, hit)] = False
                cand = cand[keep]
        return cand

    def _deciding_first(self, parts: tuple[Part, ...]) -> list[Part]:
        """Parts that need a proof from positions, those likely to match the most documents
        first (the largest smallest posting list): each later part of an OR group or of the
        exclusions then runs on fewer undecided documents. Parts of terms only keep their
        order (they are cheap either way)."""
        if not any(p.word_phrases or p.terms.phrases for p in parts):
            return list(parts)

        def reach(part: Part) -> int:
            lookup = self.lookup(part.terms)
            if not lookup.complete:
                return -1
            return min((hi - lo for lo, hi in lookup.ranges), default=0)

        return sorted(parts, key=reach, reverse=True)

    def search(self, query: str, offset: int, limit: int) -> tuple[int, list[int]]:
        """This index alone, every document live: (total, local documents of the page)."""
        everything = Segment(self, np.arange(self.ndocs, dtype=np.uint32), _NONE)
        return search([everything], compile_query(query, self.analyzer), offset, limit)

    def _word_phrase_mask(self, cand: np.ndarray, terms: list[int]) -> np.ndarray:
        """Mask of the candidates where the word terms occur at consecutive positions. Every
        candidate is in each term's postings already."""
        mask = np.zeros(cand.size, dtype=bool)
        mask[np.searchsorted(cand, self._word_phrase_docs(terms, cand))] = True
        return mask

    def _word_phrase_docs(self, terms: list[int], docs: np.ndarray | None) -> np.ndarray:
        """Documents (ascending) among ``docs`` (sorted; None: any) where the word terms occur
        at consecutive positions.

        Positions are global keys ``(document << 32) + position``, so a word's keys for
        any set of documents are one sorted array (a kept word's are sliced, not rebuilt)
        and adjacency is the intersection of two sorted arrays, with no per-candidate index.
        The word with the fewest position bytes goes first; each next word is read only for
        the documents that still have a possible start."""
        shift = len(terms) - 1  # keeps ``key - offset + shift`` >= the document's own keys
        base = self._wordpbase
        order = sorted(range(len(terms)), key=lambda i: (base[terms[i] + 1] - base[terms[i]], i))
        starts = found = _NONE
        for n, offset in enumerate(order):
            # The first word's keys are exactly those of ``docs``; a next word's may hold
            # others (the intersection with the starts drops them).
            keys = self._word_keys(terms[offset], docs, exact=n == 0) + (shift - offset)
            starts = keys if n == 0 else _intersect_sorted(starts, keys)
            if not starts.size:
                return _NONE
            owner = starts >> 32
            docs = found = owner[np.concatenate(([True], owner[1:] != owner[:-1]))]
        return found

    def _word_keys(self, term: int, docs: np.ndarray | None, exact: bool = True) -> np.ndarray:
        """Sorted keys ``(document << 32) + position`` of a word term's positions in
        ``docs`` (sorted documents, not all necessarily in its postings; all of its postings
        when None), read only. Unless ``exact``, keys of other documents may be left in when
        most are asked.

        A word with many positions (the frequent words that most phrases hold) has its keys
        made once and kept for the next phrase, within _DECODED_BYTES an index; other words
        are decoded per query for the documents asked only."""
        lo, hi = self._ptr[term], self._ptr[term + 1]
        start, stop = self._wordpbase[term], self._wordpbase[term + 1]
        kept = self._decoded.get(term)
        if kept is None and _KEEP_DECODED <= stop - start <= _DECODED_BYTES:
            nbytes = self._np_wordcount[lo:hi].astype(np.int64)
            owners = self._np_docs[lo:hi].astype(np.int64) << 32
            keys, counts = decode_gaps(self._np_wordpos[start:stop], nbytes, owners)
            kept = (counts, np.cumsum(counts) - counts, keys, stop - start)
            with self._decoded_lock:
                while self._decoded and self._decoded_size + stop - start > _DECODED_BYTES:
                    oldest = next(iter(self._decoded))
                    self._decoded_size -= self._decoded.pop(oldest)[3]
                self._decoded[term] = kept
                self._decoded_size += stop - start
        postings = self._np_docs[lo:hi]
        if kept is not None:
            counts, first, keys, _ = kept
            if docs is None or (not exact and docs.size * 2 >= hi - lo):
                # Most of the postings: every key (the caller's intersection drops the others).
                return keys
            if docs.size * 16 >= hi - lo:
                # Many documents: one pass over the keys with a mask of the documents.
                wanted = np.zeros(self.ndocs, dtype=bool)
                wanted[docs] = True
                return keys[wanted[keys >> 32]]
            hit, j = _lookup(postings, docs)
            return _gather(counts, first, j[hit], keys)[1]
        nbytes = self._np_wordcount[lo:hi].astype(np.int64)
        if docs is None or np.array_equal(docs, postings):
            data, owners = self._np_wordpos[start:stop], postings
        else:
            hit, j = _lookup(postings, docs)
            j = j[hit]
            nbytes, data = _gather(nbytes, np.cumsum(nbytes) - nbytes + start, j, self._np_wordpos)
            owners = postings[j]
        return decode_gaps(data, nbytes, owners.astype(np.int64) << 32)[0]

    def _run_positions(self, term: int, j: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(positions per posting, the positions) of a trigram term's postings ``j`` (all of
        them when None)."""
        lo, hi = self._triptr[term], self._triptr[term + 1]
        per_posting = self._np_tricount[lo:hi].astype(np.int64)
        base = self._tripbase[term]
        if j is None:
            return per_posting, self._np_tripos[base : self._tripbase[term + 1]]
        return _gather(per_posting, np.cumsum(per_posting) - per_posting + base, j, self._np_tripos)

    def _phrase_mask(self, cand: np.ndarray, covers: list[tuple[int, int]]) -> np.ndarray:
        """Mask of the candidates where every (trigram term, offset) of ``covers`` occurs at
        its offset from one start position, i.e. where the run they cover occurs. Every
        candidate is in each of those trigrams' postings already.

        The rarest trigram (fewest positions overall) goes first, and each next one's
        positions are read only for the candidates that still have a possible start."""
        ptr, docs, base = self._triptr, self._np_tridocs, self._tripbase
        covers = sorted(covers, key=lambda c: (base[c[0] + 1] - base[c[0]], c[1]))
        if cand.size <= _FEW:
            return self._phrase_mask_few(cand.tolist(), covers)
        shift = max(offset for _, offset in covers)  # keeps ``position - offset + shift`` >= 0
        live = np.arange(cand.size, dtype=np.int64)  # candidates (indexes) still possible
        starts = _NONE  # (candidate index << 32) + start + shift
        for n, (term, offset) in enumerate(covers):
            lo, hi = ptr[term], ptr[term + 1]
            # Every posting is a candidate (a frequent trigram): its positions are one slice.
            j = None if live.size == hi - lo else np.searchsorted(docs[lo:hi], cand[live])
            counts, data = self._run_positions(term, j)
            # Ascending: indexes follow the candidates, positions ascend within a posting.
            keys = np.repeat(live << 32, counts)
            keys += data
            keys += shift - offset
            starts = keys if n == 0 else _intersect_sorted(starts, keys)
            if not starts.size:
                break
            owner = starts >> 32
            live = owner[np.concatenate(([True], owner[1:] != owner[:-1]))]
        mask = np.zeros(cand.size, dtype=bool)
        mask[starts >> 32] = True
        return mask

    def _phrase_mask_few(self, cand: list[int], covers: list[tuple[int, int]]) -> np.ndarray:
        """_phrase_mask, one candidate at a time: the start positions (position - offset)
        each cover allows, intersected as sets; a candidate stays when one start is left."""
        ptr, docs, base = self._triptr, self._tridocs, self._tripbase
        counts, np_counts, positions = self._tricount, self._np_tricount, self._tripos
        mask = []
        for doc in cand:
            starts: set[int] | None = None
            for term, offset in covers:
                lo = ptr[term]
                j = bisect_left(docs, doc, lo, ptr[term + 1])  # the candidate is a posting
                first = base[term] + int(np_counts[lo:j].sum())
                found = {p - offset for p in positions[first : first + counts[j]]}
                starts = found if starts is None else starts & found
                if not starts:
                    break
            mask.append(bool(starts))
        return np.array(mask, dtype=bool)

    def _intersect(
        self, ranges: list[tuple[int, int]], filters: list[tuple[int, int]]
    ) -> np.ndarray:
        """Documents in every posting range and every trigram range (both lists sorted by
        size, rarest first): the rarest list drives, the others are probed or counted."""
        lo, hi = ranges[0] if ranges else (0, self.ndocs + 1)
        if filters and filters[0][1] - filters[0][0] < hi - lo:
            # A trigram's documents are a subset of its bigrams': usually the rarest list.
            tlo, thi = filters[0]
            return self._probe(self._np_tridocs[tlo:thi], ranges, filters[1:])
        docs = self._np_docs
        sizes = sum(end - start for start, end in ranges)
        if (hi - lo) * (len(ranges) - 1) * _PROBE_COST > sizes + self.ndocs // 2:
            # Dense candidates: one counting pass over all the postings beats binary search.
            counts = np.bincount(
                np.concatenate([docs[a:b] for a, b in ranges]), minlength=self.ndocs
            )
            return self._probe(np.flatnonzero(counts == len(ranges)), [], filters)
        return self._probe(docs[lo:hi], ranges[1:], filters)

    def _probe(
        self, cand: np.ndarray, ranges: list[tuple[int, int]], filters: list[tuple[int, int]]
    ) -> np.ndarray:
        """Keeps the candidates found in every filter range and every scored range (an empty
        range, a term no live document of this segment holds, keeps none)."""
        for n, (lo, hi) in enumerate(filters):
            if not cand.size or hi == lo:
                return cand[:0]
            if cand.size <= _FEW:
                lists = [(self._tridocs, a, b) for a, b in filters[n:]]
                return _held_few(cand, lists + [(self._docs, a, b) for a, b in ranges])
            cand = cand[_lookup(self._np_tridocs[lo:hi], cand)[0]]
        for n, (lo, hi) in enumerate(ranges):
            if not cand.size or hi == lo:
                return cand[:0]
            if cand.size <= _FEW:
                return _held_few(cand, [(self._docs, a, b) for a, b in ranges[n:]])
            if cand.size * 4 > self.ndocs:
                # Dense candidates: a mask of the posting list's documents, no binary search.
                held = np.zeros(self.ndocs, dtype=bool)
                held[self._np_docs[lo:hi]] = True
                cand = cand[held[cand]]
            else:
                cand = cand[_lookup(self._np_docs[lo:hi], cand)[0]]
        return cand


def _held_few(cand: np.ndarray, lists: list[tuple[memoryview, int, int]]) -> np.ndarray:
    """The candidates (a few, ascending) found in every sorted posting list ``view[lo:hi]``,
    each by binary search: what the _lookup masks keep, in the candidates' dtype."""
    docs = cand.tolist()
    for view, lo, hi in lists:
        docs = [d for d in docs if (i := bisect_left(view, d, lo, hi)) < hi and view[i] == d]
        if not docs:
            break
    return np.array(docs, dtype=cand.dtype)


def _intersect_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Values in both sorted, duplicate-free int64 arrays, sorted. A much shorter array is
    binary-searched in the longer one; otherwise a stable sort (timsort) merges the two runs
    in linear time and the equal neighbours are the intersection."""
    if a.size > b.size:
        a, b = b, a
    if not a.size:
        return a
    if a.size * 32 < b.size:
        return a[_lookup(b, a)[0]]
    both = np.concatenate((a, b))
    both.sort(kind="stable")
    return both[1:][both[1:] == both[:-1]]


def _gather(
    per_posting: np.ndarray, first: np.ndarray, j: np.ndarray, values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(entries per posting, the entries) of postings ``j``, whose entries start at
    ``first`` in ``values``, ``per_posting`` of them each."""
    counts = per_posting[j]
    at = np.repeat(first[j] - (np.cumsum(counts) - counts), counts)
    at += np.arange(at.size, dtype=np.int64)
    return counts, values[at]


@dataclass(frozen=True, slots=True)
class Lookup:
    """A query's terms in one segment: scored posting ranges in query order (words, unigrams,
    bigrams; empty for a term the segment lacks), and the trigram term of each trigram key."""

    ranges: list[tuple[int, int]]
    trigram_ids: dict[int, int]
    complete: bool  # every term and trigram occurs here: the segment can hold matches


DELETED = 0xFFFFFFFF  # list position of a document that is no longer served


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment as a language serves it: its index, the list position of each of its
    documents (DELETED for retracted or replaced ones), and those deleted documents, sorted."""

    index: Searcher
    positions: np.ndarray  # uint32 per local document
    deleted: np.ndarray  # sorted local documents whose position is DELETED


# Title-term counts weigh more than any BM25F sum can (a 200-character query has at most
# 200 terms, each worth at most idf * (K1 + 1) < 50), so (titles, score) ranks as one float.
_TITLE_WEIGHT = float(1 << 20)


Matches = tuple[np.ndarray, np.ndarray, np.ndarray]


def scored_matches(segments: list[Segment], query: CompiledQuery) -> Matches:
    """(list positions, BM25F sums, title-term counts) of every live match, unordered.

    idf is computed here from the live document frequency across all segments, so the
    scores are the same however the documents are split into segments and whatever was
    deleted (tests/test_incremental.py compares them bit for bit). The positive terms score;
    excluded ones do not. A query of terms only (no phrase, OR or exclusion) takes exactly
    the path it took before the syntax existed.
    """
    empty = np.zeros(0, dtype=np.uint32), np.zeros(0), np.zeros(0, dtype=np.int64)
    if query.empty:
        return empty
    simple = query.simple
    terms = query.required.terms if simple and query.required else query.scored
    lookups = [(seg, seg.index.lookup(terms)) for seg in segments]
    live = sum(seg.positions.size - seg.deleted.size for seg in segments)
    # Document frequency over every segment holding the term, matches or not.
    df = [0] * len(lookups[0][1].ranges) if lookups else []
    for seg, lookup in lookups:
        df = [a + b for a, b in zip(df, seg.index.live_df(lookup, seg.deleted), strict=True)]
    idf = [math.log1p((live - n + 0.5) / (n + 0.5)) for n in df]
    found_pos, found_acc, found_titles = [], [], []
    for seg, lookup in lookups:
        if simple:
            if not lookup.complete:
                continue
            cand = seg.index.matches(terms, lookup)
        else:
            cand = seg.index.compiled_matches(query)
        positions = seg.positions[cand]
        if seg.deleted.size:
            keep = positions != DELETED
            cand, positions = cand[keep], positions[keep]
        if cand.size:
            score = seg.index.score if simple else seg.index.score_any
            acc, titles = score(cand, lookup, idf)
            found_pos.append(positions)
            found_acc.append(acc)
            found_titles.append(titles)
    if not found_pos:
        return empty
    if len(found_pos) == 1:
        return found_pos[0], found_acc[0], found_titles[0]
    return np.concatenate(found_pos), np.concatenate(found_acc), np.concatenate(found_titles)


def search(
    segments: list[Segment], query: CompiledQuery, offset: int, limit: int
) -> tuple[int, list[int]]:
    """(total, list positions of rows offset..offset+limit-1) over the live documents of every
    segment, ranked by title-term count, then BM25F score (descending), then list position."""
    pos, acc, titles = scored_matches(segments, query)
    return rank(pos, acc, titles, offset, limit)


def rank(
    pos: np.ndarray, acc: np.ndarray, titles: np.ndarray, offset: int, limit: int
) -> tuple[int, list[int]]:
    """(total, list positions of rows offset..offset+limit-1) of matches given as aligned
    arrays (as scored_matches returns them, possibly filtered): ranked by title-term count,
    then BM25F score (descending), then list position."""
    total = int(pos.size)
    if offset >= total or limit <= 0:
        return total, []
    want = offset + limit
    if want < total:
        # Keep only the candidates that can reach the first `want` rows, with every tie at the
        # boundary (the float key is monotonic in (titles, acc), so nothing needed is lost).
        neg = -(titles * _TITLE_WEIGHT + acc)
        top = neg <= _kth_smallest(neg, want)
        pos, acc, titles = pos[top], acc[top], titles[top]
    order = np.lexsort((pos, -acc, -titles))[offset:want]
    return total, pos[order].tolist()


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
