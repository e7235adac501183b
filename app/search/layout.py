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

search.meta, the index's description (its versions, language, sizes, array types and pair
words), is a JSON object with sorted keys: `SearchMeta` is its one parser and serialiser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import orjson

from app import versions

# Every file of a language's search index, each named once here.
ALL_FILES: tuple[str, ...] = (
    META := "search.meta",
    WORDS := "search.words",
    WORDOFF := "search.wordoff",
    UNIGRAMS := "search.unigrams",
    BIGRAMS := "search.bigrams",
    PTR := "search.ptr",
    DOCS := "search.docs",
    SCORES := "search.scores",
    TRIGRAMS := "search.trigrams",
    TRIPTR := "search.triptr",
    TRIDOCS := "search.tridocs",
    TRICOUNT := "search.tricount",
    TRIPBASE := "search.tripbase",
    TRIPOS := "search.tripos",
    WORDCOUNT := "search.wordcount",
    WORDPBASE := "search.wordpbase",
    WORDPOS := "search.wordpos",
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


class IndexVersionError(ValueError):
    """A search.meta written by another index format or analyser: `recorded` holds its
    versions by the names a bundle records them under (app.bundle.versions)."""

    def __init__(self, message: str, recorded: dict[str, object]) -> None:
        super().__init__(message)
        self.recorded = recorded


_SIZES = (
    "docs",
    "words",
    "unigrams",
    "bigrams",
    "postings",
    "trigrams",
    "trigram_postings",
    "trigram_positions",
    "word_positions",
)


@dataclass(frozen=True)
class SearchMeta:
    """A segment's search.meta: what the Searcher checks at load, the builder before reusing
    or merging a segment, and the indexer and the merge write."""

    format: int  # app.versions.SEARCH_INDEX_FORMAT_VERSION when written
    analyzer: str  # app.versions.SEARCH_ANALYZER_VERSION when written
    language: str
    docs: int
    doc_type: str  # array type of DOCS: "H" up to SHORT_DOC_LIMIT documents, else "I"
    pair_words: tuple[str, ...]  # the stems pair keys number (app/search/pair_words.py)
    words: int
    unigrams: int
    bigrams: int
    trigrams: int
    trigram_postings: int
    postings: int
    trigram_positions: int
    pos_type: str  # "H" or "I"
    count_type: str  # "B", "H" or "I"
    word_positions: int
    wcount_type: str  # "B", "H" or "I"

    @classmethod
    def new(
        cls, language: str, docs: int, pair_words: Sequence[str], **counts: int | str
    ) -> SearchMeta:
        """The meta of an index this release writes, of `docs` documents."""
        return cls(
            format=versions.SEARCH_INDEX_FORMAT_VERSION,
            analyzer=versions.SEARCH_ANALYZER_VERSION,
            language=language,
            docs=docs,
            doc_type="H" if docs <= SHORT_DOC_LIMIT else "I",
            pair_words=tuple(pair_words),
            **counts,  # type: ignore[arg-type]
        )

    def to_bytes(self) -> bytes:
        fields = asdict(self)
        fields["pair_words"] = list(self.pair_words)
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)

    @classmethod
    def parse(cls, data: bytes, language: str | None = None) -> SearchMeta:
        """The meta `data` holds; ValueError saying what is wrong (IndexVersionError when it
        was written by another index format or analyser), checking in this order: JSON, the
        versions, the language (when given), the fields and their types."""
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"unreadable meta: {exc}") from exc
        if not isinstance(raw, dict):
            raise ValueError("meta is not an object")
        recorded = {"index_format": raw.get("format"), "analyzer": raw.get("analyzer")}
        if raw.get("format") != versions.SEARCH_INDEX_FORMAT_VERSION:
            raise IndexVersionError(
                f"format {raw.get('format')!r}, "
                f"this server reads format {versions.SEARCH_INDEX_FORMAT_VERSION}",
                recorded,
            )
        if raw.get("analyzer") != versions.SEARCH_ANALYZER_VERSION:
            raise IndexVersionError(
                f"built with analyser {raw.get('analyzer')!r}, "
                f"this server analyses queries with {versions.SEARCH_ANALYZER_VERSION}: "
                "rebuild the bundle",
                recorded,
            )
        if language is not None and raw.get("language") != language:
            raise ValueError(f"built for language {raw.get('language')!r}")
        try:
            written_for = raw["language"]
            if not isinstance(written_for, str):
                raise TypeError("language must be a string")
            size = {name: int(raw[name]) for name in _SIZES}
            doc_type, pos_type = str(raw["doc_type"]), str(raw["pos_type"])
            count_type, wcount_type = str(raw["count_type"]), str(raw["wcount_type"])
            listed = raw["pair_words"]
            if not isinstance(listed, list) or not all(isinstance(w, str) for w in listed):
                raise TypeError("pair_words must be a list of strings")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"incomplete meta: {exc}") from exc
        if (
            doc_type not in ("H", "I")
            or pos_type not in ("H", "I")
            or count_type not in ("B", "H", "I")
            or wcount_type not in ("B", "H", "I")
        ):
            raise ValueError("bad doc, position or count type")
        return cls(
            format=raw["format"],
            analyzer=raw["analyzer"],
            language=written_for,
            docs=size["docs"],
            doc_type=doc_type,
            pair_words=tuple(listed),
            words=size["words"],
            unigrams=size["unigrams"],
            bigrams=size["bigrams"],
            trigrams=size["trigrams"],
            trigram_postings=size["trigram_postings"],
            postings=size["postings"],
            trigram_positions=size["trigram_positions"],
            pos_type=pos_type,
            count_type=count_type,
            word_positions=size["word_positions"],
            wcount_type=wcount_type,
        )
