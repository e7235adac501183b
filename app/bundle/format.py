"""On-disk layout of a bundle, shared by the builder (writer) and the server (reader).

A bundle directory holds `manifest.json` and one sub-directory per language:

    <lang>/articles.bin    Article JSON objects in list order, joined by b","
    <lang>/articles.off    uint64 LE, n+1 entries: start of record i; entry n = len(bin) + 1
    <lang>/summaries.bin   ArticleSummary JSON objects, same order and layout
    <lang>/summaries.off
    <lang>/etags.bin       16 bytes per article: blake2b digest of its Article JSON
    <lang>/ids.bin         article ids (UTF-8), sorted bytewise, concatenated
    <lang>/ids.off         uint64 LE, n+1 entries: start of id i; entry n = len(ids.bin)
    <lang>/ids.pos         uint32 LE, n entries: list position of sorted id i
    <lang>/categories.json the categories response body (JSON array, code-point order)
    <lang>/category.pos    uint32 LE: list positions grouped per category (manifest order)
    <lang>/search.*        the search index (app.search)

"List order" is published_at descending, then id ascending, so record i of the list is
record i of articles.bin; because records are joined by commas, any run of consecutive
records i..j-1 is the single slice bin[off[i]:off[j] - 1], which makes unfiltered list
pages and `latest` one copy each.
"""

from __future__ import annotations

FORMAT_NAME = "news-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"

ARTICLES_BIN = "articles.bin"
ARTICLES_OFF = "articles.off"
SUMMARIES_BIN = "summaries.bin"
SUMMARIES_OFF = "summaries.off"
ETAGS_BIN = "etags.bin"
IDS_BIN = "ids.bin"
IDS_OFF = "ids.off"
IDS_POS = "ids.pos"
CATEGORIES_JSON = "categories.json"
CATEGORY_POS = "category.pos"
SEARCH_PREFIX = "search."

ETAG_BYTES = 16
OFFSET_TYPECODE = "Q"  # uint64, little-endian on every platform we run on (checked at load)
POSITION_TYPECODE = "I"  # uint32

RESERVED_IDS = frozenset({"latest", "search"})
MAX_ID_CHARS = 200
