"""Every version this release has, in one table: what each one versions and when to bump it.

Code reads them as ``versions.NAME`` at call time (``from app import versions``), so a test
can stand for another release by patching one here. The versions a bundle records are
compared with this release's in one place, app/bundle/versions.py; the comment store's schema
has migrations instead (app/comments/migrations.py). docs/api.md names what each API version
added.
"""

from __future__ import annotations

import zlib

from app.search.zh_tables import PHRASE_PAIRS, T2S_PAIRS

# The API: the package's version (pyproject.toml reads it from here) and /openapi.json's
# info.version, so clients can tell which contract they talk to.
API_VERSION = "1.3.0"

# What every manifest says it is, with BUNDLE_FORMAT_VERSION: a manifest of anything else is
# refused by name before its version is read.
BUNDLE_FORMAT_NAME = "news-bundle"
# The layout of a bundle's manifest and objects (app/bundle/format.py): a server refuses a
# manifest of another one, since it would misread the files.
# 4: story ids, sitemap fragments and their pieces in segments; feeds and the site entry.
# 5: corrections in segments; retractions, their notices and the corrections log.
# 6: the site entry's `news` (the news sitemap's window is cut at request time).
# 7: updated.i64 in segments (Last-Modified without reading the records); ids.hash.
# 8: the change feed (changes.*) in generations; updated.i64 in microseconds.
# 9: heads.txt in segments (each article's ETag, Last-Modified and Surrogate-Key, written by
#    the builder instead of at every load).
BUNDLE_FORMAT_VERSION = 9

# What is served, not its layout: part of every language's content hash (so of collection
# ETags), so caches drop answers whose bytes changed; bump it when the served bytes change.
# 3: every Article carries `translations`.
# 4: every Article carries `provenance` and `corrections`, every summary `ai_generated`.
BUNDLE_CONTENT_VERSION = 4

# The search index's files (app/search/layout.py), in each segment's search.meta: a segment
# of another one is refused by the server and rebuilt by the builder, never misread.
# 7: pair_words in search.meta (the archive's own list, no longer the analyser's).
SEARCH_INDEX_FORMAT_VERSION = 7

# The rules that turn text into terms (app/search/analyzers.py) and the Chinese tables they
# fold with (the CRC of both): in each search.meta, since an index built by other rules would
# silently miss matches, so it is refused instead. 6: the pair words are the index's own.
SEARCH_ANALYZER_VERSION = "6.{:08x}".format(zlib.crc32((T2S_PAIRS + PHRASE_PAIRS).encode("utf-8")))

# The feed renderers (app/syndication.py), part of every compiled feed's key
# (app/builder/generation.py): a publish reuses a feed whose key is unchanged, so bump this
# whenever a renderer's output changes. (Sitemap <url> fragments live in segments, which are
# reused as they are: a change to `sitemap_url` needs a new BUNDLE_FORMAT_VERSION, which makes
# the next build start from scratch.)
# 2: the provenance disclosure (docs/api.md §11); 3: RSS text escaped per the RSS Best
# Practices Profile, CR normalised.
FEED_RENDER_VERSION = 3

# The envelope the server writes around a list or search page's records
# (app/resources/articles.py), part of every collection ETag: bump it when the envelope
# changes, so a client's cached page is not revalidated as unchanged.
COLLECTION_ENVELOPE_VERSION = "1"

# The layout of a change-feed cursor (app/bundle/changes.py), its first byte: a cursor of
# another layout is expired rather than misread.
CHANGES_CURSOR_VERSION = 1
