"""Build-time construction of a language's search index (files: see app.search.layout).

Pure-Python counting of 10,000 CJK articles (about 60 million n-grams) takes tens of seconds,
so Python only normalises and tokenises text (and folds/stems each distinct token once);
n-gram generation, the (term, document, field) aggregation and BM25F scoring run in numpy
on bit-packed int keys. (The request path uses numpy too, for posting-list intersection
and ranking over zero-copy views of the mapped arrays: see app/search/searcher.py.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from app.search import layout, pair_words
from app.search.analyzers import (
    RUN_GAP,
    UNIGRAM_SHIFT,
    Analyzer,
    bigram_key,
    get_analyzer,
    near_term,
    normalize,
    pair_term,
    trigram_key,
    word_hash,
)
from app.search.gaps import encode_gaps
from app.search.zh_fold import CHAR_TABLE, ZH_PHRASE_RE, ZH_PHRASES, fold_code_points

_NFIELDS = len(layout.FIELD_NAMES)  # 4: a "segment" is doc << 2 | field
_SEP = 0x0A  # "\n" separates CJK runs: no n-gram spans it and no query run contains it
# Separates runs that only whitespace or punctuation keep apart (ko/ja/zh documents): trigrams
# span it (phrase proofs), unigrams and bigrams do not, and it is no character of a field.
_GAP = ord(RUN_GAP)


@dataclass(frozen=True)
class IndexDoc:
    title: str
    summary: str
    content: str
    tags: tuple[str, ...]


def _fields(doc: IndexDoc) -> tuple[str, str, str, str]:
    # Tags are one field; "\n" keeps two tags from forming one word or one CJK run.
    return (doc.title, doc.summary, doc.content, "\n".join(doc.tags))


@dataclass
class _Words:
    terms: list[str]  # sorted stems; term number = index
    term: np.ndarray  # int64 term number per occurrence
    seg: np.ndarray  # int64 segment per occurrence
    cjk_pieces: list[str]  # per segment: its CJK runs joined by "\n", plus a final "\n"


def _none() -> np.ndarray:
    return np.zeros(0)


@dataclass
class _Postings:
    """Postings of one term family, grouped by term (ascending) then document (ascending)."""

    term: np.ndarray  # int64 term number (within the family) per posting
    doc: np.ndarray  # int64
    # Scored families (words, unigrams, bigrams); empty in the others:
    tf: np.ndarray = field(default_factory=_none)  # float64 BM25F pseudo term frequency
    in_title: np.ndarray = field(default_factory=_none)  # bool
    # Trigrams: occurrences per posting, and their positions in posting order; empty in others.
    npos: np.ndarray = field(default_factory=_none)  # int64
    pos: np.ndarray = field(default_factory=_none)  # uint16 or uint32


def _no_postings(positions: np.dtype | None = None) -> _Postings:
    empty = np.zeros(0, dtype=np.int64)
    if positions is not None:
        return _Postings(empty, empty, npos=empty, pos=np.zeros(0, dtype=positions))
    return _Postings(empty, empty, np.zeros(0), np.zeros(0, dtype=bool))


def ragged_arange(counts: np.ndarray) -> np.ndarray:
    """0..counts[0]-1, 0..counts[1]-1, ... concatenated."""
    return np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) for integer arrays, by a sort: numpy 2.4's np.unique hashes first,
    and index keys (term << bits | document) collide so often in its table that it took 11.7 s
    where this takes 0.21 s on 1.5 million keys (docs/benchmarks.md, "Build throughput")."""
    ordered = np.sort(values)
    return ordered[_starts(ordered)]


def _starts(sorted_values: np.ndarray) -> np.ndarray:
    """Indices where a new value begins in a sorted array."""
    if sorted_values.size == 0:
        return np.zeros(0, dtype=np.int64)
    flags = np.empty(sorted_values.size, dtype=bool)
    flags[0] = True
    np.not_equal(sorted_values[1:], sorted_values[:-1], out=flags[1:])
    return np.flatnonzero(flags)


def _number_stems(analyzer: Analyzer, words: list[str]) -> tuple[list[str], np.ndarray]:
    """Stem distinct words; returns the sorted stems and each word's stem number.

    str order is code point order, which is also the UTF-8 byte order the Searcher uses.
    """
    stems = analyzer.stem_words(words)
    terms = sorted(set(stems))
    rank = dict(zip(terms, range(len(terms)), strict=True))
    return terms, np.fromiter(map(rank.__getitem__, stems), dtype=np.int64, count=len(stems))


def _ids(items: list, index: dict) -> np.ndarray:
    return np.fromiter(map(index.__getitem__, items), dtype=np.int64, count=len(items))


def _tokenize_latin(analyzer: Analyzer, docs: Sequence[IndexDoc]) -> _Words:
    nseg = len(docs) * _NFIELDS
    raw: list[bytes] = []
    raw_counts: list[int] = []
    for doc in docs:
        for text in _fields(doc):
            tokens = analyzer.raw_tokens(normalize(text))
            raw.extend(tokens)
            raw_counts.append(len(tokens))
    distinct = list(dict.fromkeys(raw))
    raw_ids = _ids(raw, dict(zip(distinct, range(len(distinct)), strict=True)))
    del raw
    raw_seg = np.repeat(np.arange(nseg, dtype=np.int64), np.asarray(raw_counts, dtype=np.int64))

    # Fold, split and stem each distinct raw token once.
    token_words: list[list[str]] = []
    token_runs: dict[int, list[str]] = {}
    for i, token in enumerate(distinct):
        words, runs = analyzer.token_parts(token.decode("utf-8"))
        token_words.append(words)
        if runs:
            token_runs[i] = runs
    vocab = list(dict.fromkeys(chain.from_iterable(token_words)))
    terms, stem_of_word = _number_stems(analyzer, vocab)
    word_index = dict(zip(vocab, range(len(vocab)), strict=True))
    words_per_token = np.fromiter(map(len, token_words), dtype=np.int64, count=len(token_words))
    flat = stem_of_word[_ids(list(chain.from_iterable(token_words)), word_index)]

    if words_per_token.size and bool((words_per_token == 1).all()):
        term, seg = flat[raw_ids], raw_seg
    else:
        # Ragged expansion: occurrence of token t -> its words flat[first[t]:first[t] + n[t]].
        first = np.cumsum(words_per_token) - words_per_token
        n = words_per_token[raw_ids]
        term = flat[np.repeat(first[raw_ids], n) + ragged_arange(n)]
        seg = np.repeat(raw_seg, n)

    pieces = [""] * nseg
    if token_runs:
        # Rare in Latin-language text: rebuild the CJK runs of the segments concerned, in order.
        bounds = np.concatenate(([0], np.cumsum(raw_counts, dtype=np.int64)))
        with_runs = np.isin(raw_ids, np.fromiter(token_runs, dtype=np.int64))
        for s in sorted_unique(raw_seg[with_runs]).tolist():
            ids = raw_ids[bounds[s] : bounds[s + 1]].tolist()
            runs = [run for i in ids for run in token_runs.get(i, ())]
            pieces[s] = "\n".join(runs) + "\n"
    return _Words(terms, term, seg, pieces)


def _tokenize_cjk(analyzer: Analyzer, docs: Sequence[IndexDoc]) -> _Words:
    nseg = len(docs) * _NFIELDS
    words: list[str] = []
    word_counts: list[int] = []
    pieces: list[str] = []
    for doc in docs:
        for text in _fields(doc):
            piece, field_words = analyzer.cjk_piece(normalize(text))
            words.extend(field_words)
            word_counts.append(len(field_words))
            pieces.append(piece)
    vocab = list(dict.fromkeys(words))
    terms, stem_of_word = _number_stems(analyzer, vocab)
    term = stem_of_word[_ids(words, dict(zip(vocab, range(len(vocab)), strict=True)))]
    seg = np.repeat(np.arange(nseg, dtype=np.int64), np.asarray(word_counts, dtype=np.int64))
    return _Words(terms, term, seg, pieces)


# Documents per aggregation chunk. In this environment first-touching fresh memory costs
# about 5 us per 4 KiB page, so one global sort over ~70 million CJK n-gram occurrences spent
# most of its time in page faults. Chunks keep every temporary array below glibc's 32 MiB mmap
# threshold, so the same heap memory is reused chunk after chunk.
_CHUNK_DOCS = 1024
_CHUNK_SEGBITS = (_CHUNK_DOCS - 1).bit_length() + 2
_CHUNK_DOCBITS = _CHUNK_SEGBITS - 2
_CHUNK_DOCMASK = (1 << _CHUNK_DOCBITS) - 1


def _aggregate(keys: np.ndarray, norm: np.ndarray, doc0: int) -> _Postings:
    """One chunk's occurrence keys (term << _CHUNK_SEGBITS | local doc << 2 | field) ->
    postings sorted by term, then document."""
    keys.sort()
    first = _starts(keys)
    if first.size == 0:
        return _no_postings()
    counts = np.diff(first, append=keys.size)
    distinct = keys[first]
    seg = (distinct & ((1 << _CHUNK_SEGBITS) - 1)).astype(np.intp)
    weighted = counts * norm[seg]  # BM25F: field weight / field length normalisation
    term_doc = distinct >> 2
    group = _starts(term_doc)
    tf = np.add.reduceat(weighted, group)
    in_title = np.logical_or.reduceat((seg & 3) == 0, group)
    td = term_doc[group].astype(np.int64)
    return _Postings(td >> _CHUNK_DOCBITS, (td & _CHUNK_DOCMASK) + doc0, tf, in_title)


def _positional(
    term: np.ndarray, doc: np.ndarray, pos: np.ndarray, doc0: int, term_bits: int
) -> _Postings:
    """One chunk's occurrences (term, local doc, position; given in document then position
    order) -> unscored postings sorted by term then document, with ascending positions."""
    if term.size == 0:
        return _no_postings(pos.dtype)
    pos_bits = max(1, int(pos.max()).bit_length())
    if term_bits + _CHUNK_DOCBITS + pos_bits <= 64:
        # Position packed into the key: one plain sort, no permutation to apply.
        key = (term << np.uint64(_CHUNK_DOCBITS) | doc) << np.uint64(pos_bits) | pos
        key.sort()
        term_doc = key >> np.uint64(pos_bits)
        pos = (key & np.uint64((1 << pos_bits) - 1)).astype(pos.dtype)
    else:  # very long documents: a stable sort keeps each key's positions in order
        term_doc = term << np.uint64(_CHUNK_DOCBITS) | doc
        order = term_doc.argsort(kind="stable")
        term_doc, pos = term_doc[order], pos[order]
    first = _starts(term_doc)
    td = term_doc[first].astype(np.int64)
    npos = np.diff(first, append=term_doc.size)
    return _Postings(td >> _CHUNK_DOCBITS, (td & _CHUNK_DOCMASK) + doc0, npos=npos, pos=pos)


class _Family:
    """Collects chunk postings of one term family and merges them term-major.

    Chunks arrive in document order, so a counting scatter by term keeps documents ascending
    within each term without a global sort.
    """

    def __init__(self, positions: np.dtype | None = None) -> None:
        self.positions = positions  # the dtype of positions, for a positional family
        self.parts: list[tuple[_Postings, np.ndarray, np.ndarray]] = []

    def add(self, postings: _Postings) -> None:
        if postings.term.size:
            first = _starts(postings.term)
            terms = postings.term[first]
            self.parts.append((postings, terms, np.diff(first, append=postings.term.size)))

    def merge(self) -> tuple[np.ndarray, np.ndarray, _Postings]:
        """(sorted distinct term keys, df per term, merged postings)."""
        if not self.parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, _no_postings(self.positions)
        terms = sorted_unique(np.concatenate([t for _, t, _ in self.parts]))
        dense = [np.searchsorted(terms, t) for _, t, _ in self.parts]
        df = np.zeros(terms.size, dtype=np.int64)
        for d, (_, _, counts) in zip(dense, self.parts, strict=True):
            df[d] += counts  # d has no duplicates within a chunk
        fill = np.cumsum(df) - df
        total = int(df.sum())
        merged = _Postings(np.repeat(np.arange(terms.size), df), np.empty(total, dtype=np.int64))
        if self.positions is None:
            merged.tf = np.empty(total, dtype=np.float64)
            merged.in_title = np.empty(total, dtype=bool)
        else:
            merged.npos = np.empty(total, dtype=np.int64)
        destinations = []
        for d, (part, _, counts) in zip(dense, self.parts, strict=True):
            dest = np.repeat(fill[d], counts) + ragged_arange(counts)
            merged.doc[dest] = part.doc
            if self.positions is None:
                merged.tf[dest] = part.tf
                merged.in_title[dest] = part.in_title
            else:
                merged.npos[dest] = part.npos
                destinations.append(dest)
            fill[d] += counts
        if self.positions is not None:
            # Second scatter: each posting's block of positions to its merged place.
            posoff = np.cumsum(merged.npos) - merged.npos
            merged.pos = np.empty(int(merged.npos.sum()), dtype=self.positions)
            for dest, (part, _, _) in zip(destinations, self.parts, strict=True):
                at = np.repeat(posoff[dest], part.npos) + ragged_arange(part.npos)
                merged.pos[at] = part.pos
        self.parts = []
        return terms, df, merged


def _cjk_keys(chars: np.ndarray, dense: np.ndarray, cbits: int, n: int) -> np.ndarray:
    """Dense n-gram numbers (n fields of cbits 1-based character numbers) -> index keys
    (n fields of UNIGRAM_SHIFT bits holding the code points)."""
    keys = np.zeros(dense.size, dtype=np.uint64)
    mask = (1 << cbits) - 1
    for i in range(n):
        cp = chars[((dense >> (cbits * (n - 1 - i))) & mask) - 1].astype(np.uint64)
        keys = keys << np.uint64(UNIGRAM_SHIFT) | cp
    return keys


def _pairs(
    freq: np.ndarray,
    hashes: np.ndarray,
    doc: np.ndarray,
    pos: np.ndarray,
    doc0: int,
    dtype: np.dtype,
) -> _Postings:
    """One chunk's pair postings (Latin languages; occurrences given in document then
    position order, ``freq`` their pair word numbers, -1 for other words, ``hashes`` their
    stems' word_hash): at adjacent positions of one document, two pair words post their
    pair term (Analyzer.pair_key), one pair word and another word their near term
    (Analyzer.near_key); each once a document. The term numbers are the keys themselves. No
    positions: each posting carries one position 0, the minimum of the trigram layout it
    shares."""
    adjacent = doc[:-1] == doc[1:]
    adjacent &= pos[1:].astype(np.int64) == pos[:-1].astype(np.int64) + 1
    first, second = freq[:-1], freq[1:]
    both = np.flatnonzero(adjacent & (first >= 0) & (second >= 0))
    first_only = np.flatnonzero(adjacent & (first >= 0) & (second < 0))
    second_only = np.flatnonzero(adjacent & (first < 0) & (second >= 0))
    terms = (
        (pair_term(first[both], second[both]), both),
        (near_term(True, first[first_only], hashes[1:][first_only]), first_only),
        (near_term(False, second[second_only], hashes[:-1][second_only]), second_only),
    )
    keys = [term.astype(np.uint64) << np.uint64(_CHUNK_DOCBITS) | doc[at] for term, at in terms]
    key = sorted_unique(np.concatenate(keys))
    if not key.size:
        return _no_postings(dtype)
    return _Postings(
        (key >> np.uint64(_CHUNK_DOCBITS)).astype(np.int64),
        (key & np.uint64(_CHUNK_DOCMASK)).astype(np.int64) + doc0,
        npos=np.ones(key.size, dtype=np.int64),
        pos=np.zeros(key.size, dtype=dtype),
    )


def index_meta(language: str, docs: int, pair_list: Sequence[str], **counts: int | str) -> bytes:
    """search.meta (app.search.layout.SearchMeta): versions, sizes and array types, which the
    Searcher checks at load, and the index's pair words."""
    return layout.SearchMeta.new(language, docs, pair_list, **counts).to_bytes()


def index_frame(
    language: str,
    docs: int,
    pair_list: Sequence[str],
    terms: Sequence[bytes],
    keys: tuple[np.ndarray, np.ndarray, np.ndarray],
    offsets: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    trigram_positions: int,
    word_positions: int,
    types: tuple[str, str, str],
) -> dict[str, bytes]:
    """The index's meta, terms, keys and offsets, as an index build and a segment merge both
    write them: `terms` the encoded word stems in order, `keys` (unigram code points, bigram
    and trigram keys), `offsets` (ptr, triptr, tripbase, wordpbase: each the start of a term's
    postings or positions, one past the last at the end), `types` (pos, count and wcount
    types). ValueError when an offset does not fit in 32 bits."""
    unigrams, bigrams, trigrams = keys
    ptr, triptr, tripbase, wordpbase = offsets
    pos_type, count_type, wcount_type = types
    if max(int(ptr[-1]), int(triptr[-1]), trigram_positions, word_positions) >= 1 << 32:
        raise ValueError("index too large for 32-bit offsets")
    wordoff = np.concatenate(([0], np.cumsum([len(t) for t in terms], dtype=np.int64)))
    meta = index_meta(
        language,
        docs,
        pair_list,
        words=len(terms),
        unigrams=int(unigrams.size),
        bigrams=int(bigrams.size),
        trigrams=int(trigrams.size),
        trigram_postings=int(triptr[-1]),
        postings=int(ptr[-1]),
        trigram_positions=trigram_positions,
        pos_type=pos_type,
        count_type=count_type,
        word_positions=word_positions,
        wcount_type=wcount_type,
    )
    return {
        layout.META: meta,
        layout.WORDS: b"".join(terms),
        layout.WORDOFF: wordoff.astype("<u4").tobytes(),
        layout.UNIGRAMS: unigrams.astype("<u4").tobytes(),
        layout.BIGRAMS: bigrams.astype("<u8").tobytes(),
        layout.PTR: ptr.astype("<u4").tobytes(),
        layout.TRIGRAMS: trigrams.astype("<u8").tobytes(),
        layout.TRIPTR: triptr.astype("<u4").tobytes(),
        layout.TRIPBASE: tripbase.astype("<u4").tobytes(),
        layout.WORDPBASE: wordpbase.astype("<u4").tobytes(),
    }


def _zh_tables() -> tuple[np.ndarray, np.ndarray]:
    """(phrase-start mask over app.search.zh_fold's code-point table, sorted keys of
    phrases' first two chars)."""
    starts = np.zeros(CHAR_TABLE.size, dtype=bool)
    starts[[ord(phrase[0]) for phrase in ZH_PHRASES]] = True
    # A phrase can start where its first two characters (2-character phrases) or its first
    # three (longer ones) occur: sorted keys of those prefixes.
    keys = sorted_unique(
        np.array(
            [
                trigram_key(*p[:3]) if len(p) > 2 else bigram_key(*p) | _TWO_CHAR_FLAG
                for p in ZH_PHRASES
            ],
            dtype=np.uint64,
        )
    )
    return starts, keys


# Marks a 2-character phrase's key (bit 63: trigram keys use 63 bits only).
_TWO_CHAR_FLAG = 1 << 63
_ZH_TABLES: tuple[np.ndarray, np.ndarray] | None = None


def fold_zh_code_points(
    cps: np.ndarray, piece_lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Character + vocabulary folding of all pieces at once (the same result as
    ``analyzer.fold_cjk`` on each piece). Characters fold with one numpy gather; the Python regex
    runs only where the first two characters of some phrase occur."""
    global _ZH_TABLES
    if _ZH_TABLES is None:
        _ZH_TABLES = _zh_tables()
    starts, keys = _ZH_TABLES
    if cps.size == 0:
        return cps, piece_lengths
    if int(cps.max()) >= starts.size:
        starts = np.concatenate((starts, np.zeros(int(cps.max()) + 1 - starts.size, dtype=bool)))
    cps = fold_code_points(cps)
    at = np.flatnonzero(starts[cps[:-1]])
    pair = cps[at].astype(np.uint64) << np.uint64(UNIGRAM_SHIFT) | cps[at + 1]
    third = np.append(cps, np.uint32(_SEP))[at + 2].astype(np.uint64)
    prefixes = (pair | np.uint64(_TWO_CHAR_FLAG), pair << np.uint64(UNIGRAM_SHIFT) | third)
    hit = np.zeros(at.size, dtype=bool)
    for prefix in prefixes:
        slot = np.minimum(np.searchsorted(keys, prefix), keys.size - 1)
        hit |= keys[slot] == prefix
    at = at[hit]
    if at.size == 0:
        return cps, piece_lengths
    bounds = np.concatenate(([0], np.cumsum(piece_lengths)))
    owner = np.searchsorted(bounds, at, side="right") - 1
    parts: list[np.ndarray] = []
    lengths = piece_lengths.copy()
    done = 0
    # Longest match, left to right, as app.search.zh_fold.fold_phrases does: every phrase
    # starts at one of these candidates, so trying the regex there (skipping candidates inside
    # a replaced phrase) gives the same result as a scan of the whole piece, for a fraction of
    # the cost.
    split = np.flatnonzero(np.diff(owner)) + 1
    for group in np.split(np.stack((owner, at), axis=1), split):
        piece = int(group[0, 0])
        a, z = int(bounds[piece]), int(bounds[piece + 1])
        text = cps[a:z].tobytes().decode("utf-32-le")
        out: list[str] = []
        free = 0
        for pos in (group[:, 1] - a).tolist():
            if pos < free:
                continue
            match = ZH_PHRASE_RE.match(text, pos)
            if match is not None:
                out += (text[free:pos], ZH_PHRASES[match.group()])
                free = match.end()
        if not out:
            continue
        out.append(text[free:])
        folded = "".join(out)
        parts.append(cps[done:a])
        parts.append(np.frombuffer(folded.encode("utf-32-le"), dtype="<u4"))
        lengths[piece] = len(folded)
        done = z
    parts.append(cps[done:])
    return np.concatenate(parts), lengths


def _tokenize(analyzer: Analyzer, docs: Sequence[IndexDoc]) -> _Words:
    return (_tokenize_cjk if analyzer.cjk else _tokenize_latin)(analyzer, docs)


def _runs(pieces: list[str]) -> list[str]:
    """The CJK runs of pieces (cjk_piece), in order."""
    return [r for piece in pieces for r in piece.replace("\n", RUN_GAP).split(RUN_GAP) if r]


def _gap_neighbours(pieces: list[str]) -> tuple[list[int], list[str], list[str]]:
    """(segment, run before, run after) of every run gap of pieces (cjk_piece's, one per
    segment), in order, as three columns: list slices, where a tuple per gap transposed
    by zip(*gaps) took ten times as long (millions of gaps at 20,000 Korean articles)."""
    segs: list[int] = []
    lefts: list[str] = []
    rights: list[str] = []
    for seg, piece in enumerate(pieces):
        if RUN_GAP not in piece:
            continue
        for group in piece.split("\n"):
            runs = group.split(RUN_GAP)
            if len(runs) > 1:
                segs += [seg] * (len(runs) - 1)
                lefts += runs[:-1]
                rights += runs[1:]
    return segs, lefts, rights


def _gap_ends(pieces: list[str]) -> list[str]:
    """The 2- and 3-character ends and starts of runs at the run gaps of pieces: what
    Japanese lists (its runs are clauses, which phrases rarely quote whole)."""
    out: list[str] = []
    _, lefts, rights = _gap_neighbours(pieces)
    for left, right in zip(lefts, rights, strict=True):
        out += [left[-k:] for k in (2, 3) if len(left) >= k]
        out += [right[:k] for k in (2, 3) if len(right) >= k]
    return out


def _chosen_pair_words(analyzer: Analyzer, words: _Words, ndocs: int) -> tuple[str, ...]:
    if analyzer.cjk:  # Korean: its runs; Japanese: run ends and starts at gaps; zh: none
        pieces = words.cjk_pieces
        language = analyzer.language
        units = _runs(pieces) if language == "ko" else _gap_ends(pieces) if language == "ja" else []
        counted = Counter(units)
        distinct = sorted(counted)
        counts = np.fromiter(map(counted.__getitem__, distinct), np.int64, count=len(distinct))
        return pair_words.choose(analyzer, distinct, counts, ndocs)
    counts = np.bincount(words.term, minlength=len(words.terms))
    return pair_words.choose(analyzer, words.terms, counts, ndocs)


def _run_pairs(pieces: list[str], listed: dict[str, int], dtype: np.dtype) -> _Postings:
    """Korean and Japanese pair postings: for every run gap of a field (pieces: one per
    segment, as cjk_piece makes them), the pair term (pair_term) of each listed run i that
    ends the run before the gap and each listed run j that starts the run after it, once a
    document. That is every document where the phrase ``"i j"`` occurs, and no other."""
    segs, lefts, rights = _gap_neighbours(pieces)
    if not segs:
        return _no_postings(dtype)
    docs = np.asarray(segs, dtype=np.uint64) >> np.uint64(2)
    lengths_up = sorted({len(run) for run in listed})
    lengths_down = lengths_up[::-1]

    def affixes(strings: list[str], suffix: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(per occurrence: how many listed runs it ends/starts with, where they start in
        flat; flat), computed once per distinct run."""
        distinct = list(dict.fromkeys(strings))
        flat: list[int] = []
        counts: list[int] = []
        # Only affixes as long as some listed run can be listed: longest first for endings,
        # shortest first for starts (a run of 20 characters has 20 affixes, 2 of them
        # Japanese's 2- and 3-character entries).
        get = listed.get
        for run in distinct:
            size = len(run)
            if suffix:
                hits = (get(run[size - n :]) for n in lengths_down if n <= size)
            else:
                hits = (get(run[:n]) for n in lengths_up if n <= size)
            found = [h for h in hits if h is not None]
            flat += found
            counts.append(len(found))
        per = np.asarray(counts, dtype=np.int64)
        ids = _ids(strings, dict(zip(distinct, range(len(distinct)), strict=True)))
        return per[ids], (np.cumsum(per) - per)[ids], np.asarray(flat, dtype=np.int64)

    nl, left_at, left_flat = affixes(lefts, suffix=True)
    nr, right_at, right_flat = affixes(rights, suffix=False)
    per = nl * nr
    occurrence = np.repeat(np.arange(per.size), per)
    k = ragged_arange(per)
    width = nr[occurrence]
    first = left_flat[left_at[occurrence] + k // width]
    second = right_flat[right_at[occurrence] + k % width]
    dense = (first * len(listed) + second).astype(np.uint64)
    key = sorted_unique(dense << np.uint64(32) | docs[occurrence])
    dense = (key >> np.uint64(32)).astype(np.int64)
    return _Postings(
        pair_term(dense // len(listed), dense % len(listed)),
        (key & np.uint64(0xFFFFFFFF)).astype(np.int64),
        npos=np.ones(key.size, dtype=np.int64),
        pos=np.zeros(key.size, dtype=dtype),
    )


def choose_pair_words(language: str, docs: Sequence[IndexDoc]) -> tuple[str, ...]:
    """The pair words (app/search/pair_words.py) that docs, a sample of an archive, give."""
    analyzer = get_analyzer(language)
    return _chosen_pair_words(analyzer, _tokenize(analyzer, docs), len(docs))


def build_index(
    language: str, docs: Sequence[IndexDoc], pair_list: tuple[str, ...] | None = None
) -> dict[str, bytes]:
    """docs are given in list order: position 0 is the newest article (published_at desc,
    then id asc). Returns the "search.*" files of the language's bundle directory; the output
    is deterministic (same input -> byte-identical output). ``pair_list``: the pair words of
    the archive the segment belongs to (app/search/pair_words.py); None chooses them from
    docs, as for a whole archive."""
    ndocs = len(docs)
    nseg = ndocs * _NFIELDS
    words = _tokenize(get_analyzer(language), docs)
    if pair_list is None:
        pair_list = _chosen_pair_words(get_analyzer(language), words, ndocs)
    analyzer = get_analyzer(language, pair_list)

    # Korean: pairs of listed runs across run gaps (app/search/pair_words.py).
    run_pairs = (
        _run_pairs(words.cjk_pieces, analyzer.frequent, np.dtype(np.uint32))
        if analyzer.cjk and analyzer.frequent
        else None
    )
    # CJK code points of all segments in one array, "\n" between runs.
    piece_lengths = np.fromiter(map(len, words.cjk_pieces), dtype=np.int64, count=nseg)
    cps = np.frombuffer("".join(words.cjk_pieces).encode("utf-32-le"), dtype="<u4")
    words.cjk_pieces = []
    if analyzer.zh_fold:
        # Folded here, before lengths and positions are taken: vocabulary folding can change
        # a run's length (全球資訊網 -> 万维网).
        cps, piece_lengths = fold_zh_code_points(cps, piece_lengths)
    cjk_start = np.concatenate(([0], np.cumsum(piece_lengths)))
    doc_cjk_length = np.diff(cjk_start[::_NFIELDS])  # a doc's text: its fields' pieces
    longest = int(doc_cjk_length.max()) if ndocs else 0
    if longest > 1 << 32:
        raise ValueError("a document's CJK text is too long for 32-bit positions")
    pos_dtype = np.dtype(np.uint16 if longest <= 1 << 16 else np.uint32)
    word_counts = np.bincount(words.seg, minlength=nseg)
    word_start = np.concatenate(([0], np.cumsum(word_counts)))
    # Word positions (phrases): the word's index in its field plus the field's start in the
    # document; fields follow each other with a gap of one, so no phrase spans two fields.
    per_doc = word_counts.reshape(ndocs, _NFIELDS)
    field_start = (np.cumsum(per_doc, axis=1) - per_doc + np.arange(_NFIELDS)).reshape(-1)
    word_pos = np.arange(words.seg.size, dtype=np.int64) - word_start[words.seg]
    word_pos += field_start[words.seg]
    wpos_dtype = np.dtype(np.uint16 if int(word_pos.max(initial=0)) < 1 << 16 else np.uint32)
    word_pos = word_pos.astype(wpos_dtype)
    word_bits = max(1, len(words.terms).bit_length())
    chunks = [(d0, min(ndocs, d0 + _CHUNK_DOCS)) for d0 in range(0, ndocs, _CHUNK_DOCS)]

    max_cp = max(int(cps.max()) if cps.size else 0, _SEP, _GAP)

    def chunk_cps(d0: int, d1: int) -> tuple[np.ndarray, np.ndarray]:
        """(Already folded) code points of a chunk and their local segment numbers."""
        s0, s1 = d0 * _NFIELDS, d1 * _NFIELDS
        local_seg = np.repeat(np.arange(s1 - s0, dtype=np.uint64), piece_lengths[s0:s1])
        return cps[cjk_start[s0] : cjk_start[s1]], local_seg

    # Pass 1: which characters occur, and CJK characters per segment (field length).
    present = np.zeros(max_cp + 1, dtype=bool)
    cjk_chars = np.zeros(nseg, dtype=np.int64)
    for d0, d1 in chunks:
        folded, local_seg = chunk_cps(d0, d1)
        present[folded] = True
        cjk_chars[d0 * _NFIELDS : d1 * _NFIELDS] = np.bincount(
            local_seg[(folded != _SEP) & (folded != _GAP)].astype(np.intp),
            minlength=(d1 - d0) * _NFIELDS,
        )
    present[_SEP] = False
    gap_id = int(np.count_nonzero(present[:_GAP])) + 1 if present[_GAP] else 0
    chars = np.flatnonzero(present)
    cbits = max(1, chars.size.bit_length())
    dense = np.cumsum(present, dtype=np.int64).astype(np.uint64)  # 1-based; separator -> 0
    del present
    if max(2 * cbits + _CHUNK_SEGBITS, 3 * cbits + _CHUNK_DOCBITS) > 64:
        raise ValueError("too many distinct CJK characters for 64-bit trigram keys")

    # BM25F length normalisation per (doc, field); length = words + CJK characters, against
    # fixed reference lengths so that a posting's stored part depends on its document only.
    per_field = (word_counts + cjk_chars).reshape(ndocs, _NFIELDS).astype(np.float64)
    reference = np.asarray(layout.REFERENCE_LENGTHS[analyzer.cjk])
    weights = np.asarray(layout.FIELD_WEIGHTS)
    b = np.asarray(layout.FIELD_B)
    norm = (weights / (1.0 - b + b * per_field / reference)).reshape(-1)

    # Pass 2: per chunk, occurrence keys -> postings (with positions for trigrams).
    word_family, uni_family, bi_family = _Family(), _Family(), _Family()
    tri_family = _Family(positions=pos_dtype)
    wpos_family = _Family(positions=wpos_dtype)
    # Pair and near terms of adjacent words (Latin languages; term numbers are their keys).
    nfreq = len(analyzer.frequent)
    pair_family = _Family(positions=pos_dtype)
    freq_of_term = np.full(len(words.terms) + 1, -1, dtype=np.int64)
    hash_of_term = np.zeros(len(words.terms) + 1, dtype=np.int64)
    if nfreq and not analyzer.cjk:  # (Korean pairs are of runs: _run_pairs)
        for number, stem in enumerate(words.terms):
            freq_of_term[number] = analyzer.frequent.get(stem, -1)
            hash_of_term[number] = word_hash(stem)
    for d0, d1 in chunks:
        s0, s1 = d0 * _NFIELDS, d1 * _NFIELDS
        chunk_norm = norm[s0:s1]
        a, z = word_start[s0], word_start[s1]
        word_keys = words.term[a:z].astype(np.uint64) << np.uint64(_CHUNK_SEGBITS) | (
            words.seg[a:z] - s0
        ).astype(np.uint64)
        word_family.add(_aggregate(word_keys, chunk_norm, d0))
        word_doc = (words.seg[a:z] - s0).astype(np.uint64) >> np.uint64(2)
        wpos_family.add(
            _positional(words.term[a:z].astype(np.uint64), word_doc, word_pos[a:z], d0, word_bits)
        )
        if nfreq and not analyzer.cjk and z - a > 1:
            chunk_terms = words.term[a:z]
            pair_family.add(
                _pairs(
                    freq_of_term[chunk_terms],
                    hash_of_term[chunk_terms],
                    word_doc,
                    word_pos[a:z],
                    d0,
                    pos_dtype,
                )
            )

        folded, local_seg = chunk_cps(d0, d1)
        if folded.size == 0:
            continue
        position = ragged_arange(doc_cjk_length[d0:d1]).astype(pos_dtype)
        ci = dense[folded]
        in_trigram = ci != 0  # a CJK character or a run gap
        is_char = in_trigram & (ci != gap_id) if gap_id else in_trigram
        seg_shift = np.uint64(_CHUNK_SEGBITS)
        uni_family.add(_aggregate(ci[is_char] << seg_shift | local_seg[is_char], chunk_norm, d0))
        bigram = is_char[:-1] & is_char[1:]
        pair = ci[:-1][bigram] << np.uint64(cbits) | ci[1:][bigram]
        bi_family.add(_aggregate(pair << seg_shift | local_seg[:-1][bigram], chunk_norm, d0))
        # Trigrams of characters and run gaps (a gap has a character on both sides).
        trigram = in_trigram[:-2] & in_trigram[1:-1] & in_trigram[2:]
        triple = (ci[:-2][trigram] << np.uint64(cbits) | ci[1:-1][trigram]) << np.uint64(
            cbits
        ) | ci[2:][trigram]
        tri_doc = local_seg[:-2][trigram] >> np.uint64(2)
        tri_family.add(_positional(triple, tri_doc, position[:-2][trigram], d0, 3 * cbits))

    word_terms, word_df, word_postings = word_family.merge()
    if not np.array_equal(word_terms, np.arange(len(words.terms))):
        raise AssertionError("every stem must have postings")
    _, _, wpos_postings = wpos_family.merge()
    if not np.array_equal(wpos_postings.doc, word_postings.doc):
        raise AssertionError("word positions must follow the word postings")
    uni_dense, uni_df, uni_postings = uni_family.merge()
    bi_dense, bi_df, bi_postings = bi_family.merge()
    unigram_cps = chars[uni_dense.astype(np.int64) - 1].astype(np.uint32)
    bi_dense = bi_dense.astype(np.int64)
    bigram_keys = _cjk_keys(chars, bi_dense, cbits, 2)
    tri_dense, tri_df, tri_postings = tri_family.merge()
    trigram_keys = _cjk_keys(chars, tri_dense.astype(np.int64), cbits, 3)
    if run_pairs is not None:
        run_pairs.pos = run_pairs.pos.astype(pos_dtype)
        pair_family.add(run_pairs)
    pair_dense, pair_df, pair_postings = pair_family.merge()
    if pair_dense.size:
        # Pair and near keys (first field PAIR_MARK or NEAR_MARKS, no character) sort before
        # every trigram key: put them first.
        pair_keys = pair_dense.astype(np.uint64)
        trigram_keys = np.concatenate((pair_keys, trigram_keys))
        tri_df = np.concatenate((pair_df, tri_df))
        tri_postings = _Postings(
            np.zeros(0, dtype=np.int64),
            np.concatenate((pair_postings.doc, tri_postings.doc)),
            npos=np.concatenate((pair_postings.npos, tri_postings.npos)),
            pos=np.concatenate((pair_postings.pos, tri_postings.pos)).astype(pos_dtype),
        )
    triptr = np.concatenate(([0], np.cumsum(tri_df)))

    # Per posting, the part of BM25F that depends on its document alone: the saturated term
    # frequency, negated when the term is in the title. idf depends on the whole (live) archive,
    # so the Searcher multiplies it in at query time (exact after any publish or retraction).
    families = (word_postings, uni_postings, bi_postings)
    df = np.concatenate((word_df, uni_df, bi_df))
    tf = np.concatenate([p.tf for p in families])
    scores = tf * (layout.K1 + 1.0) / (tf + layout.K1)
    scores[np.concatenate([p.in_title for p in families])] *= -1.0
    post_docs = np.concatenate([p.doc for p in families])
    ptr = np.concatenate(([0], np.cumsum(df)))
    tri_counts = tri_postings.npos
    tripbase: np.ndarray = np.concatenate(
        ([0], np.cumsum(np.add.reduceat(tri_counts, triptr[:-1]) if tri_counts.size else []))
    )
    positions = int(tri_counts.sum())
    word_bytes, word_gaps = encode_gaps(wpos_postings.npos, wpos_postings.pos)
    wordpbase = np.concatenate(([0], np.cumsum(word_bytes)))[ptr[: len(words.terms) + 1]]
    word_positions = int(word_gaps.size)
    wcount_type = layout.count_type(int(word_bytes.max()) if word_bytes.size else 0)
    count_type = layout.count_type(int(tri_counts.max()) if tri_counts.size else 0)
    pos_type = "H" if pos_dtype == np.uint16 else "I"
    frame = index_frame(
        language,
        ndocs,
        pair_list,
        [t.encode("utf-8") for t in words.terms],
        (unigram_cps, bigram_keys, trigram_keys),
        (ptr, triptr, tripbase, wordpbase),
        positions,
        word_positions,
        (pos_type, count_type, wcount_type),
    )
    doc_dtype = "<u2" if ndocs <= layout.SHORT_DOC_LIMIT else "<u4"
    postings = {
        layout.DOCS: post_docs.astype(doc_dtype).tobytes(),
        layout.SCORES: scores.astype("<f4").tobytes(),
        layout.TRIDOCS: tri_postings.doc.astype(doc_dtype).tobytes(),
        layout.TRICOUNT: tri_counts.astype(layout.NUMPY_TYPES[count_type]).tobytes(),
        layout.TRIPOS: tri_postings.pos.astype(pos_dtype.newbyteorder("<")).tobytes(),
        layout.WORDCOUNT: word_bytes.astype(layout.NUMPY_TYPES[wcount_type]).tobytes(),
        layout.WORDPOS: word_gaps.tobytes(),
    }
    return frame | postings
