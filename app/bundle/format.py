"""On-disk layout of a bundle, shared by the builder (writer) and the server (reader).

A bundle directory holds one `manifest.json` and a store of immutable, content-addressed
files (docs/publishing.md):

    manifest.json             the served generation (below); replaced by an atomic rename
    manifest.previous.json    the generation before it, kept for rollback
    objects/<sha256>          every data file, named by the SHA-256 of its bytes
    verified.json             objects checked byte for byte since they were written here
    build-state.json          the builder's record of its sources (build directories only)

The manifest's fields are typed and checked in app/bundle/manifest.py, the versions a
bundle records in app/bundle/versions.py (their values: app/versions.py), and how a new
manifest replaces the served one in app/bundle/commit.py.

Per language the manifest lists **segments** and **generation files**. A segment holds a set
of articles, in list order (published_at descending, then id ascending), with everything that
depends on those articles alone; it is written once and shared by every later generation
until a merge replaces it:

    articles.bin / .off       Article JSON objects joined by b",", uint64 offsets (n + 1)
    summaries.bin / .off      ArticleSummary JSON, same layout
    etags.bin                 16 bytes per article: BLAKE2b of its Article JSON
    ids.bin / .off            ids (UTF-8) in segment order, uint64 offsets (n + 1)
    published.i64             published_at in microseconds since the epoch
    updated.i64               updated_at in microseconds since the epoch (Last-Modified takes
                              the whole seconds; the change feed the exact time)
    category.u32 / categories.json
                              each article's category, as an index into the segment's names
    lines.bin                 16 bytes per article: the hash of its source line (builds only)
    stories.bin / .off        each article's story_id (UTF-8, empty: none), uint64 offsets
    sitemap.bin / .off        each article's sitemap <url> element, joined by b"\n", uint64
                              offsets laid out as for the JSON (n + 1)
    articles.gzip / .off      each Article compressed as a piece (app.compression): raw deflate
    articles.zstd / .off      ended by a full flush, or one zstd frame; joined by the encoding's
    summaries.gzip / .off     separator (compression.separators: the kind's "," or "\n" as a
    summaries.zstd / .off     stored block or a raw frame), uint64 offsets laid out as for the
    sitemap.gzip / .off       JSON (n + 1)
    sitemap.zstd / .off
    articles.br / .off        each Article as a whole brotli stream (get), no separator
    search.*                  the search index (app.search.layout)
    corrections.json          the corrections of the segment's articles that have any:
                              [[document, title, [[at microseconds, at, text], ...]], ...]

A document's **gid** is its segment's base (the documents of the segments before it, in
manifest order) plus its number inside the segment. The generation files of a language are
rewritten by every publish; they are a few bytes per article:

    order.u32                 gid of every served article, in list order
    ids.bin / .off / .gid     served ids sorted bytewise, uint64 offsets, and each id's gid
    ids.hash                  hash table over those ids for O(1) lookup (app.bundle.id_index)
    category.pos              list positions grouped by category (categories in code-point
                              order; the ranges are in the manifest)
    categories.json           the categories response body
    categories.json.gzip / .br / .zstd
                              the same body in each content coding (compression.precompress)
    published.pos             published_at (int64 microseconds) per list position: the list
                              is published desc, so a date range is a binary search giving a
                              contiguous position range
    oldest.pos                list positions oldest first (published asc, id asc)
    category.of               category number (uint32, code-point order) per list position:
                              search filters and facets are numpy gathers and a bincount
    category.old              list positions grouped by category as category.pos, each group
                              oldest first (same ranges)
    stories.bin / .off / .gid served articles' story ids sorted bytewise, and each one's gid
    feeds.json                where each feed document is: the manifest's `feeds` names one
                              object per category ("" for all) holding its Atom, RSS and
                              JSON Feed documents, each in identity, gzip, br and zstd, end
                              to end; per feed the key of what it was rendered from, so a
                              publish renders and compresses only the feeds that changed
    retractions.json          the retracted articles (docs/api.md §11), by id: each one's
                              notice and what the next build needs to keep it (line hash,
                              corrections), and where its 410 body is in notices.bin
    notices.bin               every 410 body in identity, gzip, br and zstd, end to end
    log.bin / .off            the corrections log entries, newest first, joined by b",";
    log.gzip / .off           the same records as compressed pieces, laid out as a
    log.zstd / .off           segment's records (uint64 offsets, n + 1)
    changes.log               the change feed (docs/api.md §13): one 16-byte record per id
                              whose latest change is kept (app/bundle/changes.py)
    changes.ids / .off        the ids of its `removed` entries, sorted bytewise
    changes.json              its lineage, head, floor and the publishes kept

The manifest's `site` entry holds what spans languages: the sitemap index and the news
sitemap, each in identity, gzip, br and zstd (`files`), the codec that compressed them, the
sitemap page size, the public URLs the bundle was built with, and `news`: each news sitemap
entry's published_at (µs) and the end of its line, newest first.

A gid that is not in order.u32 is deleted (retracted, or replaced by a newer version).
"""

from __future__ import annotations

import hashlib
from typing import Final

from app.search import layout

MANIFEST = "manifest.json"
PREVIOUS_MANIFEST = "manifest.previous.json"
OBJECTS = "objects"
VERIFIED = "verified.json"
# The builder's record of each source file's line hashes (app.builder.builder), so that the
# next build reads only the files that changed.
BUILD_STATE = "build-state.json"

# Segment files.
ARTICLES_BIN = "articles.bin"
ARTICLES_OFF = "articles.off"
SUMMARIES_BIN = "summaries.bin"
SUMMARIES_OFF = "summaries.off"
ETAGS_BIN = "etags.bin"
SEG_IDS_BIN = "ids.bin"
SEG_IDS_OFF = "ids.off"
PUBLISHED = "published.i64"
UPDATED = "updated.i64"
CATEGORY_OF = "category.u32"
SEG_CATEGORIES = "categories.json"
LINES = "lines.bin"
STORIES_BIN = "stories.bin"
STORIES_OFF = "stories.off"
SITEMAP_BIN = "sitemap.bin"
SITEMAP_OFF = "sitemap.off"
SEARCH_PREFIX = "search."
SEG_CORRECTIONS = "corrections.json"
# What each article sends whatever the request (ETag, Last-Modified, Surrogate-Key):
# fixed-width ASCII records, app.bundle.heads.
HEADS = "heads.txt"
# Per-document records composed into responses: kind -> (blob, offsets, the identity byte
# that joins two records). XML elements cannot be joined by a comma: sitemaps use b"\n".
RECORDS: dict[str, tuple[str, str, bytes]] = {
    "articles": (ARTICLES_BIN, ARTICLES_OFF, b","),
    "summaries": (SUMMARIES_BIN, SUMMARIES_OFF, b","),
    "sitemap": (SITEMAP_BIN, SITEMAP_OFF, b"\n"),
}
# Compressed pieces: (kind, encoding) -> (blob, offsets). The identity blobs are above.
PIECES: dict[tuple[str, str], tuple[str, str]] = {
    ("articles", "gzip"): ("articles.gzip", "articles.gzip.off"),
    ("articles", "zstd"): ("articles.zstd", "articles.zstd.off"),
    ("articles", "br"): ("articles.br", "articles.br.off"),
    ("summaries", "gzip"): ("summaries.gzip", "summaries.gzip.off"),
    ("summaries", "zstd"): ("summaries.zstd", "summaries.zstd.off"),
    ("sitemap", "gzip"): ("sitemap.gzip", "sitemap.gzip.off"),
    ("sitemap", "zstd"): ("sitemap.zstd", "sitemap.zstd.off"),
}
# The components: the files a segment, a language's generation and the site entry each
# hold, one object apiece. The writers name an object for each, the manifest parser
# (app.bundle.manifest) refuses an entry with one missing or one more, and the installer and
# garbage collection reach every object through them.
SEGMENT_FILES: tuple[str, ...] = (
    ARTICLES_BIN,
    ARTICLES_OFF,
    SUMMARIES_BIN,
    SUMMARIES_OFF,
    ETAGS_BIN,
    SEG_IDS_BIN,
    SEG_IDS_OFF,
    PUBLISHED,
    UPDATED,
    CATEGORY_OF,
    SEG_CATEGORIES,
    LINES,
    STORIES_BIN,
    STORIES_OFF,
    SITEMAP_BIN,
    SITEMAP_OFF,
    SEG_CORRECTIONS,
    HEADS,
    *(name for pair in PIECES.values() for name in pair),
    *layout.ALL_FILES,
)

# Generation files.
ORDER = "order.u32"
IDS_BIN = "ids.bin"
IDS_OFF = "ids.off"
IDS_GID = "ids.gid"
IDS_HASH = "ids.hash"
CATEGORY_POS = "category.pos"
CATEGORIES_JSON = "categories.json"
# The categories body in each content coding: encoding -> file.
CATEGORIES_ENCODED = {e: f"categories.json.{e}" for e in ("gzip", "br", "zstd")}
PUBLISHED_POS = "published.pos"
OLDEST_POS = "oldest.pos"
CATEGORY_OF_POS = "category.of"
CATEGORY_OLDEST = "category.old"
STORY_IDS_BIN = "stories.bin"
STORY_IDS_OFF = "stories.off"
STORY_IDS_GID = "stories.gid"
FEEDS_JSON = "feeds.json"
RETRACTIONS_JSON = "retractions.json"
NOTICES_BIN = "notices.bin"
# The corrections log's records: encoding -> (blob, offsets); joined by b"," like articles.
LOG_KIND = "log"
LOG_FILES = {
    "identity": ("log.bin", "log.off"),
    "gzip": ("log.gzip", "log.gzip.off"),
    "zstd": ("log.zstd", "log.zstd.off"),
}
LOG_SEPARATOR = b","
# The change feed (app/bundle/changes.py).
CHANGES_LOG = "changes.log"
CHANGES_IDS_BIN = "changes.ids"
CHANGES_IDS_OFF = "changes.ids.off"
CHANGES_JSON = "changes.json"
GENERATION_FILES: tuple[str, ...] = (
    ORDER,
    IDS_BIN,
    IDS_OFF,
    IDS_GID,
    IDS_HASH,
    CATEGORY_POS,
    CATEGORIES_JSON,
    *CATEGORIES_ENCODED.values(),
    PUBLISHED_POS,
    OLDEST_POS,
    CATEGORY_OF_POS,
    CATEGORY_OLDEST,
    STORY_IDS_BIN,
    STORY_IDS_OFF,
    STORY_IDS_GID,
    FEEDS_JSON,
    RETRACTIONS_JSON,
    NOTICES_BIN,
    *(name for pair in LOG_FILES.values() for name in pair),
    CHANGES_LOG,
    CHANGES_IDS_BIN,
    CHANGES_IDS_OFF,
    CHANGES_JSON,
)
# Content codings of the precompressed whole documents (feeds, sitemap index, news sitemap).
DOCUMENT_ENCODINGS = ("identity", "gzip", "br", "zstd")

# Site files (manifest "site"/"files"): each document in every DOCUMENT_ENCODINGS coding,
# identity under its own name, the others as `<name>.<coding>`.
SITEMAP_INDEX = "sitemap.xml"
NEWS_SITEMAP = "news.xml"
SITE_DOCUMENTS = (SITEMAP_INDEX, NEWS_SITEMAP)


def site_file(document: str, encoding: str) -> str:
    return document if encoding == "identity" else f"{document}.{encoding}"


SITE_FILES: tuple[str, ...] = tuple(
    site_file(d, e) for d in SITE_DOCUMENTS for e in DOCUMENT_ENCODINGS
)
# URLs per sitemap page (the sitemaps.org limit); the build records the value it used.
SITEMAP_PAGE_URLS = 50_000

ETAG_BYTES = 16


def content_digest(body: bytes | memoryview) -> bytes:
    """The digest behind every stored body's ETag: an article record's (etags.bin holds it
    raw), a feed's and a retraction notice's (their entries hold it as hex), a site
    document's. One recipe, so the same bytes always carry the same tag."""
    return hashlib.blake2b(body, digest_size=ETAG_BYTES).digest()


LINE_HASH_BYTES = 16
OFFSET_TYPECODE: Final = "Q"  # uint64, little-endian on every platform we run on (checked at load)
POSITION_TYPECODE: Final = "I"  # uint32
