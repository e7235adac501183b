"""On-disk layout of a bundle, shared by the builder (writer) and the server (reader).

A bundle directory holds one `manifest.json` and a store of immutable, content-addressed
files (docs/publishing.md):

    manifest.json             the served generation (below); replaced by an atomic rename
    manifest.previous.json    the generation before it, kept for rollback
    objects/<sha256>          every data file, named by the SHA-256 of its bytes
    verified.json             objects checked byte for byte since they were written here

Per language the manifest lists **segments** and **generation files**. A segment holds a set
of articles, in list order (published_at descending, then id ascending), with everything that
depends on those articles alone; it is written once and shared by every later generation
until a merge replaces it:

    articles.bin / .off       Article JSON objects joined by b",", uint64 offsets (n + 1)
    summaries.bin / .off      ArticleSummary JSON, same layout
    etags.bin                 16 bytes per article: BLAKE2b of its Article JSON
    ids.bin / .off            ids (UTF-8) in segment order, uint64 offsets (n + 1)
    published.i64             published_at in microseconds since the epoch
    category.u32 / categories.json
                              each article's category, as an index into the segment's names
    lines.bin                 16 bytes per article: the hash of its source line (builds only)
    stories.bin / .off        each article's story_id (UTF-8, empty: none), uint64 offsets
    sitemap.bin / .off        each article's sitemap <url> element, joined by b"\n"
    search.*                  the search index (app.search.layout)

A document's **gid** is its segment's base (the documents of the segments before it, in
manifest order) plus its number inside the segment. The generation files of a language are
rewritten by every publish; they are a few bytes per article:

    order.u32                 gid of every served article, in list order
    ids.bin / .off / .gid     served ids sorted bytewise, uint64 offsets, and each id's gid
    category.pos              list positions grouped by category (categories in code-point
                              order; the ranges are in the manifest)
    categories.json           the categories response body
    stories.bin / .off / .gid served articles' story ids sorted bytewise, and each one's gid
    feeds.json                where each feed document is: the manifest's `feeds` names one
                              object per category ("" for all) holding its Atom, RSS and
                              JSON Feed documents end to end

The manifest's `site` entry holds what spans languages: the sitemap index and the news
sitemap (`files`), the sitemap page size and the public URLs the bundle was built with.

A gid that is not in order.u32 is deleted (retracted, or replaced by a newer version).
"""

from __future__ import annotations

FORMAT_NAME = "news-bundle"
FORMAT_VERSION = 3
MANIFEST = "manifest.json"
PREVIOUS_MANIFEST = "manifest.previous.json"
OBJECTS = "objects"
VERIFIED = "verified.json"

# Segment files.
ARTICLES_BIN = "articles.bin"
ARTICLES_OFF = "articles.off"
SUMMARIES_BIN = "summaries.bin"
SUMMARIES_OFF = "summaries.off"
ETAGS_BIN = "etags.bin"
SEG_IDS_BIN = "ids.bin"
SEG_IDS_OFF = "ids.off"
PUBLISHED = "published.i64"
CATEGORY_OF = "category.u32"
SEG_CATEGORIES = "categories.json"
LINES = "lines.bin"
STORIES_BIN = "stories.bin"
STORIES_OFF = "stories.off"
SITEMAP_BIN = "sitemap.bin"
SITEMAP_OFF = "sitemap.off"
SEARCH_PREFIX = "search."
SEGMENT_FILES = (
    ARTICLES_BIN,
    ARTICLES_OFF,
    SUMMARIES_BIN,
    SUMMARIES_OFF,
    ETAGS_BIN,
    SEG_IDS_BIN,
    SEG_IDS_OFF,
    PUBLISHED,
    CATEGORY_OF,
    SEG_CATEGORIES,
    LINES,
    STORIES_BIN,
    STORIES_OFF,
    SITEMAP_BIN,
    SITEMAP_OFF,
)

# Generation files.
ORDER = "order.u32"
IDS_BIN = "ids.bin"
IDS_OFF = "ids.off"
IDS_GID = "ids.gid"
CATEGORY_POS = "category.pos"
CATEGORIES_JSON = "categories.json"
STORY_IDS_BIN = "stories.bin"
STORY_IDS_OFF = "stories.off"
STORY_IDS_GID = "stories.gid"
FEEDS_JSON = "feeds.json"
GENERATION_FILES = (
    ORDER,
    IDS_BIN,
    IDS_OFF,
    IDS_GID,
    CATEGORY_POS,
    CATEGORIES_JSON,
    STORY_IDS_BIN,
    STORY_IDS_OFF,
    STORY_IDS_GID,
    FEEDS_JSON,
)

# Site files (manifest "site"/"files").
SITEMAP_INDEX = "sitemap.xml"
NEWS_SITEMAP = "news.xml"
SITE_FILES = (SITEMAP_INDEX, NEWS_SITEMAP)
# URLs per sitemap page (the sitemaps.org limit); the build records the value it used.
SITEMAP_PAGE_URLS = 50_000

ETAG_BYTES = 16
LINE_HASH_BYTES = 16
OFFSET_TYPECODE = "Q"  # uint64, little-endian on every platform we run on (checked at load)
POSITION_TYPECODE = "I"  # uint32

RESERVED_IDS = frozenset({"latest", "search"})
MAX_ID_CHARS = 200
