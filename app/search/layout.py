"""On-disk layout of a language's search index, shared by the indexer and the Searcher.

A CJK query run of three characters is one trigram posting lookup; a longer run is proven
from trigram positions (``ABCDE``: ``ABC`` at p and ``CDE`` at p + 2), so no document text is
ever read.

All arrays are little-endian, fixed width, one per file, so the Searcher reads them with
``memoryview.cast`` straight from the mmap (no parsing, pages shared between workers).

=================  ===========================  =============================================
file               type                         content
=================  ===========================  =============================================
search.meta        JSON                         format/analyser version, counts, parameters
search.words       UTF-8 bytes                  stemmed word terms, sorted, concatenated
search.wordoff     uint32 x (words + 1)         byte offset of each word term in search.words
search.unigrams    uint32 x unigrams            sorted code points of indexed CJK characters
search.bigrams     uint64 x bigrams             sorted CJK bigram keys (``cp1 << 21 | cp2``)
search.ptr         uint32 x (terms + 1)         posting range of term t: ptr[t] .. ptr[t + 1];
                                                terms are numbered words, unigrams, bigrams
search.docs        uint16 or uint32 x postings  document positions, ascending within a term
search.scores      float32 x postings           precomputed BM25F score (+ title tier)
search.trigrams    uint64 x trigrams            sorted CJK trigram keys (``cp1 << 42 | ...``)
search.triptr      uint32 x (trigrams + 1)      trigram t's documents: tridocs[triptr[t] ..
                                                triptr[t + 1]]
search.tridocs     uint16 or uint32 x           document positions, ascending within a
                   trigram postings             trigram (no scores: trigrams only filter)
search.triposoff   uint32 x (tri-postings + 1)  trigram posting j's occurrences:
                                                tripos[triposoff[j] .. triposoff[j + 1]]
search.tripos      uint16 or uint32 x           where the trigram starts in the document,
                   trigram occurrences          ascending: code point offset in the doc's
                                                folded CJK runs (fields in order, one
                                                separator after each run)
=================  ===========================  =============================================
"""

from __future__ import annotations

FORMAT_VERSION = 3

META = "search.meta"
WORDS = "search.words"
WORDOFF = "search.wordoff"
UNIGRAMS = "search.unigrams"
BIGRAMS = "search.bigrams"
PTR = "search.ptr"
DOCS = "search.docs"
SCORES = "search.scores"
TRIGRAMS = "search.trigrams"
TRIPTR = "search.triptr"
TRIDOCS = "search.tridocs"
TRIPOSOFF = "search.triposoff"
TRIPOS = "search.tripos"

ALL_FILES: tuple[str, ...] = (
    META,
    WORDS,
    WORDOFF,
    UNIGRAMS,
    BIGRAMS,
    PTR,
    DOCS,
    SCORES,
    TRIGRAMS,
    TRIPTR,
    TRIDOCS,
    TRIPOSOFF,
    TRIPOS,
)

# Documents per index up to which positions are stored as uint16.
SHORT_DOC_LIMIT = 1 << 16

# BM25F parameters (field order: title, summary, content, tags).
FIELD_NAMES: tuple[str, ...] = ("title", "summary", "content", "tags")
FIELD_WEIGHTS: tuple[float, ...] = (3.0, 1.5, 1.0, 2.0)
FIELD_B: tuple[float, ...] = (0.5, 0.6, 0.75, 0.0)
K1 = 1.2
# Added once per query term found in the title, so that documents matching more query terms
# in their title always rank first ("title matches rank above body-only matches"). It is far
# above any BM25F term score (at most idf * (K1 + 1) < 40 for any realistic corpus), and the
# per-posting float32 keeps about 1e-4 precision next to it.
TITLE_TIER = 1000.0
