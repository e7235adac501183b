"""Every version a bundle depends on, in one block, and the one check of them.

A bundle records what it was made with; this release can use a bundle only when each of
those is what it has itself. The bundle format's own versions are defined here; the others
are derived where the code they version lives (the search index layout, the analysers' word
lists, the compression levels and libraries, the feed renderer) and only gathered here.

    format_version   the layout of the manifest and its objects (app/bundle/format.py);
                     checked when a manifest is read: another version is refused
    content_version  what is served, not the layout: part of every language's content hash
                     (hence collection ETags); bump it when the served bytes change
    codec            app.compression.CODEC_ID: what made the compressed bytes, per language
    index_format     app.search.layout.FORMAT_VERSION, in each segment's search.meta
    analyzer         app.search.analyzers.ANALYZER_VERSION, in each segment's search.meta
    render_version   app.syndication.RENDER_VERSION, part of each feed's key

A server refuses a manifest of another format version. The builder reuses segments and
pieces only when the codec, index format and analyser they were made with are this
release's (`mismatch`), and otherwise builds from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping

from app import compression, syndication
from app.search import analyzers, layout

FORMAT_NAME = "news-bundle"
# 4: story ids, sitemap fragments and their pieces in segments; feeds and the site entry.
# 5: corrections in segments; retractions, their notices and the corrections log.
# 6: the site entry's `news` (the news sitemap's window is cut at request time).
# 7: updated.i64 in segments (Last-Modified without reading the records); ids.hash.
# 8: the change feed (changes.*) in generations; updated.i64 in microseconds.
FORMAT_VERSION = 8
# 3: every Article carries `translations`.
# 4: every Article carries `provenance` and `corrections`, every summary `ai_generated`.
CONTENT_VERSION = 4

# What each recorded version is called in a message.
_LABELS = {
    "format_version": "bundle format version",
    "codec": "compression codec",
    "index_format": "search index format",
    "analyzer": "search analyser version",
}


def current() -> dict[str, object]:
    """This release's versions, by the names a bundle records them under. Read at call time,
    so that a test can stand for another release by patching one."""
    return {
        "format_version": FORMAT_VERSION,
        "content_version": CONTENT_VERSION,
        "codec": compression.CODEC_ID,
        "index_format": layout.FORMAT_VERSION,
        "analyzer": analyzers.ANALYZER_VERSION,
        "render_version": syndication.RENDER_VERSION,
    }


def mismatch(recorded: Mapping[str, object]) -> str | None:
    """None when every version in `recorded` is this release's; else what differs, naming the
    version, e.g. "bundle format version 6, this release reads version 7"."""
    ours = current()
    for key, value in recorded.items():
        if value != ours[key]:
            return f"{_LABELS.get(key, key)} {value!r}, this release reads version {ours[key]!r}"
    return None
