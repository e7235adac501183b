"""The versions a bundle records, and the one check of them against this release's.

A bundle records what it was made with; this release can use a bundle only when each of
those is what it has itself. The versions are defined in app/versions.py (the codec is
app.compression.CODEC_ID, derived from the compression levels and libraries); here they are
gathered under the names a bundle records them by:

    format_version   app.versions.BUNDLE_FORMAT_VERSION, in the manifest; checked when a
                     manifest is read: another version is refused
    content_version  app.versions.BUNDLE_CONTENT_VERSION, part of every language's content
                     hash (hence collection ETags)
    codec            app.compression.CODEC_ID: what made the compressed bytes, per language
    index_format     app.versions.SEARCH_INDEX_FORMAT_VERSION, in each segment's search.meta
    analyzer         app.versions.SEARCH_ANALYZER_VERSION, in each segment's search.meta
    render_version   app.versions.FEED_RENDER_VERSION, part of each feed's key

A server refuses a manifest of another format version. The builder reuses segments and
pieces only when the codec, index format and analyser they were made with are this
release's (`mismatch`), and otherwise builds from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping

from app import compression, versions

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
        "format_version": versions.BUNDLE_FORMAT_VERSION,
        "content_version": versions.BUNDLE_CONTENT_VERSION,
        "codec": compression.CODEC_ID,
        "index_format": versions.SEARCH_INDEX_FORMAT_VERSION,
        "analyzer": versions.SEARCH_ANALYZER_VERSION,
        "render_version": versions.FEED_RENDER_VERSION,
    }


def mismatch(recorded: Mapping[str, object]) -> str | None:
    """None when every version in `recorded` is this release's; else what differs, naming the
    version, e.g. "bundle format version 6, this release reads version 7"."""
    ours = current()
    for key, value in recorded.items():
        if value != ours[key]:
            return f"{_LABELS.get(key, key)} {value!r}, this release reads version {ours[key]!r}"
    return None
