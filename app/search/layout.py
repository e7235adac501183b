"""On-disk layout of a language's search index, shared by the indexer and the Searcher.

A CJK query run of three characters is one trigram posting lookup; a longer run is proven
from trigram positions (``ABCDE``: ``ABC`` at p and ``CDE`` at p + 2), so no document text is
ever read.

All arrays are little-endian, fixed width, one per file, so the Searcher reads them with
``memoryview.cast`` straight from the mmap (no parsing, pages shared between workers).

=================  ===========================  =============================================
file               type                         content
=================  ===========================  =============================================
search.meta        JSON                         format/analyser version, counts, parameters,
                                                pair_words (the pair terms' words, numbered
                                                as listed: app/search/pair_words.py)
search.words       UTF-8 bytes                  stemmed word terms, sorted, concatenated
search.wordoff     uint32 x (words + 1)         byte offset of each word term in search.words
search.unigrams    uint32 x unigrams            sorted code points of indexed CJK characters
search.bigrams     uint64 x bigrams             sorted CJK bigram keys (``cp1 << 21 | cp2``)
search.ptr         uint32 x (terms + 1)         posting range of term t: ptr[t] .. ptr[t + 1];
                                                terms are numbered words, unigrams, bigrams
search.docs        uint16 or uint32 x postings  document positions, ascending within a term
search.scores      float32 x postings           the posting's BM25F saturation (no idf),
                                                negative when the term is in the title
search.trigrams    uint64 x trigrams            sorted CJK trigram keys (``cp1 << 42 | ...``);
                                                ko/ja/zh also post the trigrams that span a
                                                run gap (RUN_GAP, 0x20: only whitespace or
                                                punctuation between two runs of a field);
                                                en/fr/de/es/it the pairs of adjacent pair
                                                words (``1 << 42 | i << 21 | j``, i and j
                                                their numbers in pair_words; first of all
                                                keys; one position 0 each, unused)
search.triptr      uint32 x (trigrams + 1)      trigram t's documents: tridocs[triptr[t] ..
                                                triptr[t + 1]]
search.tridocs     uint16 or uint32 x           document positions, ascending within a
                   trigram postings             trigram (no scores: trigrams only filter)
search.tricount    uint8, 16 or 32 x            occurrences of the trigram in posting j's
                   trigram postings             document (count_type: the narrowest that fits)
search.tripbase    uint32 x (trigrams + 1)      where trigram t's occurrences start in tripos;
                                                posting j's follow those of the postings
                                                before it in the same term
search.tripos      uint16 or uint32 x           where the trigram starts in the document,
                   trigram occurrences          ascending: code point offset in the doc's
                                                folded CJK runs (fields in order, one
                                                separator after each run)
search.wordcount   uint8, 16 or 32 x            bytes of word posting j's positions in
                   word postings                wordpos (word postings come first in docs)
search.wordpbase   uint32 x (words + 1)         where word t's position bytes start in wordpos
search.wordpos     uint8 x bytes                per word posting, where the word occurs
                                                (index of the analysed word in the document,
                                                fields in order, a gap of one between fields):
                                                the first position, then the gaps, as LEB128
                                                varints (app/search/gaps.py)
=================  ===========================  =============================================

A change here needs a new app.versions.SEARCH_INDEX_FORMAT_VERSION.
"""

from __future__ import annotations

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
TRICOUNT = "search.tricount"
TRIPBASE = "search.tripbase"
TRIPOS = "search.tripos"
WORDCOUNT = "search.wordcount"
WORDPBASE = "search.wordpbase"
WORDPOS = "search.wordpos"

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
    TRICOUNT,
    TRIPBASE,
    TRIPOS,
    WORDCOUNT,
    WORDPBASE,
    WORDPOS,
)


# Narrowest unsigned type (struct/array code) holding every value up to `largest`.
def count_type(largest: int) -> str:
    return "B" if largest < 1 << 8 else "H" if largest < 1 << 16 else "I"


NUMPY_TYPES: dict[str, str] = {"B": "<u1", "H": "<u2", "I": "<u4"}

# Documents per index up to which positions are stored as uint16.
SHORT_DOC_LIMIT = 1 << 16

# BM25F parameters (field order: title, summary, content, tags).
FIELD_NAMES: tuple[str, ...] = ("title", "summary", "content", "tags")
FIELD_WEIGHTS: tuple[float, ...] = (3.0, 1.5, 1.0, 2.0)
FIELD_B: tuple[float, ...] = (0.5, 0.6, 0.75, 0.0)
K1 = 1.2
# BM25F normalises a field's length by a reference length. Classic BM25 uses the corpus
# average, but that changes with every publish and would make every stored score stale; a
# fixed reference per script keeps each posting's stored part a function of its own document,
# so a segment built today ranks exactly like the same article in a from-scratch build
# (docs/publishing.md). Values: typical news field lengths (words for Latin scripts,
# characters plus words for CJK), close to the averages of the sample and synthetic corpora.
REFERENCE_LENGTHS: dict[bool, tuple[float, ...]] = {
    False: (10.0, 35.0, 500.0, 3.0),  # en, fr, de, es, it
    True: (30.0, 150.0, 2000.0, 6.0),  # ko, ja, zh_cn, zh_tw
}
