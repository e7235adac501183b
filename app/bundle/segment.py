"""One stored segment, mapped: the one reader of a segment's components (app.bundle.format).

The server slices its records (one article, a run of a list page, in every encoding); the
builder reads its small per-document arrays (published times, ids, categories, stories,
corrections) to order a generation, merge segments and carry articles into the next build.
Both read a component through the accessors here, so its layout is decoded in one place.
"""

from __future__ import annotations

import functools
import mmap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle.errors import BundleError
from app.bundle.heads import Heads
from app.bundle.manifest import Segment
from app.bundle.objects import ObjectStore, map_file
from app.compression import IDENTITY, separators
from app.search import layout

# kind -> encoding -> the bytes between two records (fmt.RECORDS, compression.separators)
SEPARATORS: dict[str, dict[str, bytes]] = {
    kind: separators(sep) for kind, (_, _, sep) in fmt.RECORDS.items()
}
SEPARATORS[fmt.LOG_KIND] = separators(fmt.LOG_SEPARATOR)


class SegmentReader:
    """A segment's components: its records (Article, ArticleSummary and sitemap <url>, in
    every encoding), checked against their offsets when mapped, and its per-document arrays.

    `objects` is where the segment's objects come from: the views a loaded bundle mapped
    (object name -> view), or the builder's store, whose files are mapped here."""

    __slots__ = (
        "_files",
        "articles",
        "articles_off",
        "docs",
        "etags",
        "heads",
        "pieces",
        "updated",
        "whole",
    )

    def __init__(
        self,
        objects: ObjectStore | Mapping[str, memoryview],
        segment: Segment,
        where: str = "segment",
    ) -> None:
        self.docs = docs = segment.docs
        if isinstance(objects, ObjectStore):
            files = {name: map_file(objects.path(obj)) for name, obj in segment.files.items()}
        else:
            files = {name: objects[obj] for name, obj in segment.files.items()}
        self._files = files
        self.articles = files[fmt.ARTICLES_BIN]
        self.articles_off = files[fmt.ARTICLES_OFF].cast(fmt.OFFSET_TYPECODE)
        self.etags = files[fmt.ETAGS_BIN]  # fmt.ETAG_BYTES per document
        self.updated = files[fmt.UPDATED].cast("q")  # microseconds (Last-Modified, changes)
        # No deleted documents: consecutive gids can be sliced as one run (LanguageData).
        self.whole = True
        # The header values of each article, when a server loads it (LanguageData).
        self.heads: Heads | None = None
        # (kind, encoding) -> (blob, offsets, separator length): every encoding of a record.
        self.pieces: dict[tuple[str, str], tuple[memoryview, memoryview, int]] = {}
        for kind, (name_bin, name_off, separator) in fmt.RECORDS.items():
            self.pieces[kind, IDENTITY] = (
                files[name_bin],
                files[name_off].cast(fmt.OFFSET_TYPECODE),
                len(separator),
            )
        for (kind, encoding), (name_bin, name_off) in fmt.PIECES.items():
            self.pieces[kind, encoding] = (
                files[name_bin],
                files[name_off].cast(fmt.OFFSET_TYPECODE),
                len(SEPARATORS[kind][encoding]),
            )
        for (kind, encoding), (blob, off, sep) in self.pieces.items():
            # The last record is followed by a virtual separator.
            end = len(blob) + sep if docs else 0
            if len(off) != docs + 1 or off[docs] != end or off[0] != 0:
                raise BundleError(f"{where}/{kind} ({encoding}): offsets do not match the data")
        if len(self.etags) != docs * fmt.ETAG_BYTES:
            raise BundleError(f"{where}/{fmt.ETAGS_BIN}: size does not match")
        if len(self.updated) != docs:
            raise BundleError(f"{where}/{fmt.UPDATED}: size does not match")

    # -- records: what responses are made of (the request path) ----------------------------

    def record(self, local: int) -> memoryview:
        """Document `local`'s Article JSON."""
        off = self.articles_off
        return self.articles[off[local] : off[local + 1] - 1]

    def encoded_run(self, kind: str, encoding: str, start: int, stop: int) -> memoryview:
        """Records start..stop-1 of `kind` in `encoding`, joined by its separator."""
        blob, off, sep = self.pieces[kind, encoding]
        return blob[off[start] : off[stop] - sep]

    # -- per-document arrays (the builder) -------------------------------------------------

    def published(self) -> np.ndarray:
        """published_at of every document, int64 microseconds."""
        return np.frombuffer(self._files[fmt.PUBLISHED], dtype="<i8")

    def lines(self) -> memoryview:
        """fmt.LINE_HASH_BYTES per document: the hash of its source line."""
        return self._files[fmt.LINES]

    def ids(self) -> list[bytes]:
        """Every document's id (UTF-8)."""
        return _strings(
            self._files[fmt.SEG_IDS_BIN], self._files[fmt.SEG_IDS_OFF], range(self.docs)
        )

    def id_at(self, local: int) -> bytes:
        return _strings(self._files[fmt.SEG_IDS_BIN], self._files[fmt.SEG_IDS_OFF], (local,))[0]

    def stories(self) -> list[bytes]:
        """Every document's story_id (b"" when none)."""
        return _strings(
            self._files[fmt.STORIES_BIN], self._files[fmt.STORIES_OFF], range(self.docs)
        )

    def with_story(self, among: np.ndarray) -> list[tuple[int, bytes]]:
        """(document, story_id) of the documents of `among` (bool per document) that have a
        story; only those are decoded (most articles have none)."""
        off = np.frombuffer(self._files[fmt.STORIES_OFF], dtype="<u8")
        wanted = np.flatnonzero(among & (np.diff(off) > 0)).tolist()
        stories = _strings(self._files[fmt.STORIES_BIN], self._files[fmt.STORIES_OFF], wanted)
        return list(zip(wanted, stories, strict=True))

    def categories(self) -> list[str]:
        """Every document's category."""
        names, numbers = self.category_table()
        return [names[i] for i in numbers.tolist()]

    def category_table(self) -> tuple[list[str], np.ndarray]:
        """(the segment's category names, each document's index into them)."""
        names: list[str] = orjson.loads(self._files[fmt.SEG_CATEGORIES])
        return names, np.frombuffer(self._files[fmt.CATEGORY_OF], dtype="<u4")

    def corrections(self) -> list[list[Any]]:
        """[[document, title, [[at microseconds, at, text], ...]], ...] (fmt.SEG_CORRECTIONS)."""
        return orjson.loads(self._files[fmt.SEG_CORRECTIONS])

    # -- the search index (its layout: app.search.layout) ----------------------------------

    def search_files(self) -> dict[str, memoryview]:
        """The index's components by name, for app.search.searcher.Searcher."""
        return {k: v for k, v in self._files.items() if k.startswith(fmt.SEARCH_PREFIX)}

    def search_meta(self) -> layout.SearchMeta:
        return layout.SearchMeta.parse(bytes(self._files[layout.META]))

    def array(self, name: str, dtype: str) -> np.ndarray:
        """A component as a numpy array (the index's, read by merges)."""
        return np.frombuffer(self._files[name], dtype=dtype)

    def raw(self, name: str) -> memoryview:
        """A component's bytes as stored: merges copy fixed-width components verbatim."""
        return self._files[name]

    def release(self) -> None:
        """Drop the pages read so far from this process (they stay in the page cache): a merge
        reads every input once, and its resident memory should follow its batch, not the
        inputs' size."""
        for view in self._files.values():
            if view.nbytes and isinstance(view.obj, mmap.mmap):
                view.obj.madvise(mmap.MADV_DONTNEED)


def _strings(blob: memoryview, offsets: memoryview, which: Sequence[int]) -> list[bytes]:
    """Strings `which` of a blob with uint64 offsets (n + 1), as bytes."""
    off = offsets.cast(fmt.OFFSET_TYPECODE)
    return [blob[off[i] : off[i + 1]].tobytes() for i in which]


class Records(Protocol):
    """What a Run slices: a segment's records or the corrections log's (app.bundle.language)."""

    def encoded_run(self, kind: str, encoding: str, start: int, stop: int) -> memoryview: ...


Source = TypeVar("Source", bound=Records)


class Run(NamedTuple, Generic[Source]):
    """Consecutive records start..stop-1 of one segment (or of the corrections log): one
    slice in every encoding. A tuple: pages make one per record of a category or search
    page, on every request."""

    segment: Source
    start: int
    stop: int

    def encoded(self, kind: str, encoding: str) -> memoryview:
        return self.segment.encoded_run(kind, encoding, self.start, self.stop)


def last_modified(runs: Sequence[Run[SegmentReader]]) -> str | None:
    """Last-Modified of a page of articles: the HTTP-date of the newest `updated_at` of its
    records, to the second (updated.i64, written by the builder in microseconds); None for
    an empty page."""
    newest = None
    for segment, start, stop in runs:
        if stop > start:
            top = segment.updated[start] if stop - start == 1 else max(segment.updated[start:stop])
            if newest is None or top > newest:
                newest = top
    return None if newest is None else http_date(newest // 1_000_000)


@functools.lru_cache(maxsize=4096)  # pages of one bundle share a few hundred moments
def http_date(seconds: int) -> str:
    """The HTTP-date (RFC 9110, 5.6.7) of a Unix time."""
    return format_datetime(datetime.fromtimestamp(seconds, UTC), usegmt=True)
