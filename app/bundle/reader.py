"""Memory-mapped, read-only access to a built bundle (layout in app.bundle.format).

Nothing here parses article JSON: responses are slices of the mapped objects. Worker
processes map the same files, so article bytes live once in the page cache. Loading a new
generation maps only the objects the served one lacks, so a publish costs the worker what
the publish changed.
"""

from __future__ import annotations

import bisect
import errno
import functools
import hashlib
import itertools
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, TypeVar

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle import ranking
from app.bundle.id_index import IdIndex
from app.compression import IDENTITY, separators
from app.languages import LANGUAGES
from app.search import searcher as search
from app.search.analyzers import get_analyzer
from app.search.cache import MatchCache
from app.search.highlight import Highlighter
from app.search.query import CompiledQuery, compile_query
from app.sorted_bytes import SortedBytes
from app.syndication import FEED_FORMATS, NEWS_TAIL


class BundleError(Exception):
    """The bundle cannot be served: missing, corrupt, or of an incompatible format."""


class BundleUnavailable(Exception):
    """A request needs objects of the served bundle that were found damaged on disk: it is
    answered 503 (app.errors) rather than read from a mapping that may fault."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class Unavailable:
    """Stands in for a language (or the site) whose objects are damaged: any use raises
    BundleUnavailable. Requests for what is intact never meet it, so they pay nothing."""

    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail

    def __getattr__(self, name: str) -> Any:
        raise BundleUnavailable(self.detail)


_EMPTY = memoryview(b"")
# kind -> encoding -> the bytes between two records (fmt.RECORDS, compression.separators)
SEPARATORS: dict[str, dict[str, bytes]] = {
    kind: separators(sep) for kind, (_, _, sep) in fmt.RECORDS.items()
}
SEPARATORS[fmt.LOG_KIND] = separators(fmt.LOG_SEPARATOR)
_NO_POSITIONS = memoryview(b"").cast(fmt.POSITION_TYPECODE)

# "trusted": check sizes, and the CRC-32 of objects not in verified.json (what a server does);
# "crc32": the CRC-32 of every object; "sha256": every object against its name (a full scrub).
Verify = Literal["trusted", "crc32", "sha256"]

# (st_dev, st_ino, st_mtime_ns, st_size) of the manifest a bundle was loaded from.
Identity = tuple[int, int, int, int]
# Who uses an object: a language code, or SITE for the sitemap index and news sitemap.
SITE = "site"


class Mapped(NamedTuple):
    """An object as a worker mapped it, with the stat it had then."""

    view: memoryview
    stamp: list[int]  # [inode, mtime_ns, size]: verified.json's record of a checked file
    ctime_ns: int  # changes with any write, truncation or chmod, even one that restores mtime


def _negative(value: int) -> int:
    return -value


@dataclass(frozen=True, slots=True)
class ListPage:
    """What a list request selects beyond category and page (docs/api.md §7)."""

    first: int | None = None  # published microseconds, inclusive; None: open
    last: int | None = None
    oldest: bool = False
    summary: bool = False


@dataclass(frozen=True, slots=True)
class SearchPage:
    first: int | None = None
    last: int | None = None
    order: str = "relevance"  # relevance | newest | oldest
    summary: bool = False


class SortedIds(SortedBytes):
    """A language's served ids (ids.bin, sorted bytewise) with the gid of each (ids.gid):
    item i is the i-th id, for `bisect`."""

    __slots__ = ("_gid",)

    def __init__(
        self, ids_bin: memoryview | bytes, ids_off: memoryview | bytes, gids: memoryview | bytes
    ) -> None:
        super().__init__(memoryview(ids_bin), memoryview(ids_off).cast(fmt.OFFSET_TYPECODE))
        self._gid = memoryview(gids).cast(fmt.POSITION_TYPECODE)

    def gids(self) -> memoryview:
        return self._gid

    def get(self, article_id: str) -> int | None:
        """The gid of the article with this id, or None."""
        i = self.index(article_id.encode("utf-8", "surrogatepass"))
        return None if i < 0 else self._gid[i]


@dataclass(frozen=True, slots=True)
class CategoryRange:
    start: int
    count: int


class SegmentData:
    """One segment's records: Article, ArticleSummary and sitemap <url>, in every encoding."""

    __slots__ = (
        "articles",
        "articles_off",
        "docs",
        "etags",
        "pieces",
        "summaries",
        "summaries_off",
        "updated",
        "whole",
    )

    def __init__(self, docs: int, files: Mapping[str, memoryview], where: str) -> None:
        self.docs = docs
        self.articles = files[fmt.ARTICLES_BIN]
        self.articles_off = files[fmt.ARTICLES_OFF].cast(fmt.OFFSET_TYPECODE)
        self.summaries = files[fmt.SUMMARIES_BIN]
        self.summaries_off = files[fmt.SUMMARIES_OFF].cast(fmt.OFFSET_TYPECODE)
        self.etags = files[fmt.ETAGS_BIN]
        self.updated = files[fmt.UPDATED].cast("q")
        self.whole = True  # no deleted documents: consecutive gids can be sliced as one run
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

    def record(self, local: int) -> memoryview:
        off = self.articles_off
        return self.articles[off[local] : off[local + 1] - 1]

    def run(self, start: int, stop: int) -> memoryview:
        off = self.articles_off
        return self.articles[off[start] : off[stop] - 1]

    def summaries_run(self, start: int, stop: int) -> memoryview:
        off = self.summaries_off
        return self.summaries[off[start] : off[stop] - 1]

    def encoded_run(self, kind: str, encoding: str, start: int, stop: int) -> memoryview:
        """Records start..stop-1 of `kind` in `encoding`, joined by its separator."""
        blob, off, sep = self.pieces[kind, encoding]
        return blob[off[start] : off[stop] - sep]


class CorrectionsLog:
    """A language's corrections log (docs/api.md §11): pre-serialised entries, newest first,
    in identity and as gzip and zstd pieces, sliced into pages like a segment's records."""

    __slots__ = ("count", "pieces")

    def __init__(self, files: Mapping[str, memoryview], where: str) -> None:
        self.pieces: dict[str, tuple[memoryview, memoryview, int]] = {}
        self.count = -1
        for encoding, (name_bin, name_off) in fmt.LOG_FILES.items():
            blob, off = files[name_bin], files[name_off].cast(fmt.OFFSET_TYPECODE)
            sep = len(SEPARATORS[fmt.LOG_KIND][encoding])
            n = len(off) - 1
            if self.count not in (-1, n) or off[0] != 0 or off[n] != (len(blob) + sep if n else 0):
                raise BundleError(f"{where}/{name_off}: offsets do not match the data")
            self.count = n
            self.pieces[encoding] = (blob, off, sep)

    def encoded_run(self, kind: str, encoding: str, start: int, stop: int) -> memoryview:
        blob, off, sep = self.pieces[encoding]
        return blob[off[start] : off[stop] - sep]

    def page(self, start: int, stop: int) -> list[Run[CorrectionsLog]]:
        stop = min(stop, self.count)
        return [Run(self, start, stop)] if start < stop else []


# A segment's runs have records (and their `updated`); the corrections log's only slices.
Source = TypeVar("Source", SegmentData, CorrectionsLog)


@dataclass(frozen=True, slots=True)
class Run(Generic[Source]):
    """Consecutive records start..stop-1 of one segment (or of the corrections log): one
    slice in every encoding."""

    segment: Source
    start: int
    stop: int

    def encoded(self, kind: str, encoding: str) -> memoryview:
        return self.segment.encoded_run(kind, encoding, self.start, self.stop)


def newest_updated(runs: Sequence[Run[SegmentData]]) -> datetime | None:
    """Last-Modified of a page of articles: the newest `updated_at` of its records, to the
    second (an HTTP-date's precision; updated.i64, written by the builder); None for an empty
    page."""
    newest = None
    for run in runs:
        if run.stop > run.start:
            top = max(run.segment.updated[run.start : run.stop])
            if newest is None or top > newest:
                newest = top
    return None if newest is None else _moment(newest)


@functools.lru_cache(maxsize=4096)
def _moment(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class LanguageData:
    """One language of a bundle: its segments and the generation that orders them."""

    def __init__(
        self,
        language: str,
        meta: Mapping[str, Any],
        views: Mapping[str, memoryview],
    ) -> None:
        self.language = language
        self.count: int = meta["articles"]
        self.content_hash: str = meta["content_hash"]
        self.codec: str = meta["codec"]  # app.compression.CODEC_ID of the builder
        where = f"language {language}"
        gen = {name: views[obj] for name, obj in meta["files"].items()}
        self.segments: list[SegmentData] = []
        self.bases: list[int] = []
        searchers: list[search.Searcher] = []
        base = 0
        for n, desc in enumerate(meta["segments"]):
            files = {name: views[obj] for name, obj in desc["files"].items()}
            docs = int(desc["docs"])
            self.segments.append(SegmentData(docs, files, f"{where} segment {n}"))
            self.bases.append(base)
            try:
                searchers.append(
                    search.Searcher(
                        language,
                        {k: v for k, v in files.items() if k.startswith(fmt.SEARCH_PREFIX)},
                    )
                )
            except ValueError as exc:
                raise BundleError(f"{where} segment {n}: {exc}") from None
            if searchers[-1].ndocs != docs:
                raise BundleError(
                    f"{where} segment {n}: index holds {searchers[-1].ndocs} documents"
                )
            base += docs
        self.total_gids = base
        self._order = gen[fmt.ORDER].cast(fmt.POSITION_TYPECODE)
        order = self._order_array = np.frombuffer(self._order, dtype="<u4")
        self._bases_array = np.asarray(self.bases, dtype=np.int64)
        if order.size != self.count or (order.size and int(order.max()) >= base):
            raise BundleError(f"{where}/{fmt.ORDER}: does not match {self.count} articles")
        # List position of every gid, DELETED for the documents no longer served.
        positions = np.full(base, search.DELETED, dtype=np.uint32)
        positions[order] = np.arange(order.size, dtype=np.uint32)
        if np.count_nonzero(positions != search.DELETED) != order.size:
            raise BundleError(f"{where}/{fmt.ORDER}: an article is listed twice")
        self._search_segments = []
        self._match_cache = MatchCache()  # queries with syntax (app/search/cache.py)
        for searcher, b, seg in zip(searchers, self.bases, self.segments, strict=True):
            mine = positions[b : b + seg.docs]
            deleted = np.flatnonzero(mine == search.DELETED)
            seg.whole = not deleted.size
            self._search_segments.append(search.Segment(searcher, mine, deleted))
        self._analyzer = get_analyzer(language)
        id_gids = gen[fmt.IDS_GID].cast(fmt.POSITION_TYPECODE)
        if len(id_gids) != self.count:
            raise BundleError(f"{where}/ids: index size does not match {self.count} articles")
        if self.count and max(id_gids) >= base:
            raise BundleError(f"{where}/{fmt.IDS_GID}: gid out of range")
        try:
            self._ids = IdIndex(
                gen[fmt.IDS_BIN],
                gen[fmt.IDS_OFF].cast(fmt.OFFSET_TYPECODE),
                id_gids,
                gen[fmt.IDS_HASH].cast(fmt.POSITION_TYPECODE),
            )
        except ValueError as exc:
            raise BundleError(f"{where}/{fmt.IDS_HASH}: {exc}") from None
        self.categories_json: bytes = gen[fmt.CATEGORIES_JSON].tobytes()
        # encoding -> the categories body in it (identity included)
        self.categories_encoded: dict[str, bytes] = {IDENTITY: self.categories_json}
        for encoding, name in fmt.CATEGORIES_ENCODED.items():
            self.categories_encoded[encoding] = gen[name].tobytes()
        self._category_pos = gen[fmt.CATEGORY_POS].cast(fmt.POSITION_TYPECODE)
        self._categories: dict[str, CategoryRange] = {
            name: CategoryRange(start, count) for name, start, count in meta["categories"]
        }
        if sum(r.count for r in self._categories.values()) != len(self._category_pos):
            raise BundleError(f"{where}/{fmt.CATEGORY_POS}: size does not match")
        self._category_names = [name for name, _, _ in meta["categories"]]
        self._category_number = {name: i for i, name in enumerate(self._category_names)}
        self._published_at = gen[fmt.PUBLISHED_POS].cast("q")
        self._published = np.frombuffer(self._published_at, dtype="<i8")
        self._oldest = gen[fmt.OLDEST_POS].cast(fmt.POSITION_TYPECODE)
        self._category_of = np.frombuffer(gen[fmt.CATEGORY_OF_POS], dtype="<u4")
        self._category_oldest = gen[fmt.CATEGORY_OLDEST].cast(fmt.POSITION_TYPECODE)
        for name, size in (
            (fmt.PUBLISHED_POS, len(self._published_at)),
            (fmt.OLDEST_POS, len(self._oldest)),
            (fmt.CATEGORY_OF_POS, self._category_of.size),
            (fmt.CATEGORY_OLDEST, len(self._category_oldest)),
        ):
            if size != self.count:
                raise BundleError(f"{where}/{name}: size does not match {self.count} articles")
        # Feeds: per category ("" for all) one object; per format where each coding is.
        feeds = orjson.loads(gen[fmt.FEEDS_JSON])
        self.feeds_updated: str = feeds["updated"]
        self._feeds: dict[str, dict[str, tuple[dict[str, memoryview], str]]] = {}
        if set(meta["feeds"]) != set(feeds["feeds"]):
            raise BundleError(f"{where}/{fmt.FEEDS_JSON}: does not match the feed objects")
        for name, index in feeds["feeds"].items():
            blob = views[meta["feeds"][name]]
            compiled = {}
            for kind in FEED_FORMATS:
                variants = {}
                for encoding in fmt.DOCUMENT_ENCODINGS:
                    start, stop = index[kind][encoding]
                    if not 0 <= start <= stop <= len(blob):
                        raise BundleError(f"{where}/{fmt.FEEDS_JSON}: feed outside its object")
                    variants[encoding] = blob[start:stop]
                compiled[kind] = (variants, f'"{index[kind]["etag"]}"')
            self._feeds[name] = compiled
        # Retracted articles: id -> (their 410 body in every coding, its quoted ETag).
        self.retracted: dict[str, tuple[dict[str, memoryview], str]] = {}
        notices = gen[fmt.NOTICES_BIN]
        for record in orjson.loads(gen[fmt.RETRACTIONS_JSON]):
            variants = {}
            for encoding, (start, stop) in record["notice"]["ranges"].items():
                if not 0 <= start <= stop <= len(notices):
                    raise BundleError(f"{where}/{fmt.NOTICES_BIN}: notice outside its object")
                variants[encoding] = notices[start:stop]
            self.retracted[record["id"]] = (variants, f'"{record["notice"]["etag"]}"')
        self.corrections = CorrectionsLog(gen, where)

    # -- lookups -----------------------------------------------------------------------

    def _segment(self, gid: int) -> tuple[SegmentData, int]:
        if len(self.bases) == 1:
            return self.segments[0], gid
        n = bisect.bisect_right(self.bases, gid) - 1
        return self.segments[n], gid - self.bases[n]

    def find(self, article_id: str) -> int | None:
        """The gid of the article with this id, or None."""
        return self._ids.get(article_id)

    def article_by_gid(self, gid: int) -> memoryview:
        segment, local = self._segment(gid)
        return segment.record(local)

    def etag_by_gid(self, gid: int) -> str:
        segment, local = self._segment(gid)
        return segment.etags[local * fmt.ETAG_BYTES : (local + 1) * fmt.ETAG_BYTES].hex()

    def article(self, pos: int) -> memoryview:
        """The article at a list position."""
        return self.article_by_gid(self._order[pos])

    def _run(self, start: int, stop: int) -> tuple[SegmentData, int, int] | None:
        """Positions start..stop-1 as one run of a segment, when they are one. A segment is in
        list order, so when it has no deleted documents, the gids g..g+n-1 of its documents
        sit at consecutive positions: a window from g to g+n-1 holds exactly them."""
        first, last = self._order[start], self._order[stop - 1]
        if last - first != stop - 1 - start:
            return None
        segment, local = self._segment(first)
        if not segment.whole or local + (stop - start) > segment.docs:
            return None
        return segment, local, local + (stop - start)

    def articles_run(self, start: int, stop: int) -> memoryview | bytes:
        """Articles at list positions start..stop-1 as comma-joined JSON objects."""
        return self._records(start, stop, SegmentData.run)

    def summaries_run(self, start: int, stop: int) -> memoryview | bytes:
        """The same positions as ArticleSummary objects."""
        return self._records(start, stop, SegmentData.summaries_run)

    def _records(
        self, start: int, stop: int, run_of: Callable[[SegmentData, int, int], memoryview]
    ) -> memoryview | bytes:
        if start >= stop:
            return _EMPTY
        run = self._run(start, stop)
        if run is not None:
            return run_of(*run)
        parts = []
        for p in range(start, stop):
            segment, local = self._segment(self._order[p])
            parts.append(run_of(segment, local, local + 1))
        return b",".join(parts)

    def runs(self, start: int, stop: int) -> list[Run[SegmentData]]:
        """List positions start..stop-1 as runs: one when they are one run of a segment."""
        if start >= stop:
            return []
        run = self._run(start, stop)
        if run is not None:
            return [Run(*run)]
        return self.runs_at(range(start, stop))

    def runs_at(self, positions: Sequence[int] | memoryview) -> list[Run[SegmentData]]:
        """One run per list position (search hits, category pages)."""
        out = []
        for p in positions:
            segment, local = self._segment(self._order[p])
            out.append(Run(segment, local, local + 1))
        return out

    def run_by_gid(self, gid: int) -> Run[SegmentData]:
        segment, local = self._segment(gid)
        return Run(segment, local, local + 1)

    def coalesced_runs(self, start: int, stop: int) -> list[Run[SegmentData]]:
        """List positions start..stop-1 as the fewest runs, for long ranges (sitemap pages of
        up to 50,000 records): consecutive gids of one segment are adjacent records even when
        the segment has deleted documents elsewhere, so they are one slice."""
        if start >= stop:
            return []
        run = self._run(start, stop)
        if run is not None:
            return [Run(*run)]
        gids = self._order_array[start:stop].astype(np.int64)
        seg = np.searchsorted(self._bases_array, gids, side="right") - 1
        cuts = np.flatnonzero((np.diff(gids) != 1) | (np.diff(seg) != 0)) + 1
        bounds = [0, *cuts.tolist(), len(gids)]
        out = []
        for first, end in itertools.pairwise(bounds):
            n = int(seg[first])
            local = int(gids[first]) - self.bases[n]
            out.append(Run(self.segments[n], local, local + end - first))
        return out

    def feed(self, kind: str, category: str | None) -> tuple[dict[str, memoryview], str] | None:
        """A compiled feed in every coding (identity, gzip, br, zstd) and its quoted identity
        ETag, or None for a category with no article."""
        compiled = self._feeds.get(category or "")
        return None if compiled is None else compiled[kind]

    def category_positions(self, category: str) -> memoryview:
        """List positions of one category's articles, in list order (empty if unknown)."""
        r = self._categories.get(category)
        if r is None:
            return _NO_POSITIONS
        return self._category_pos[r.start : r.start + r.count]

    def summary(self, pos: int) -> memoryview:
        """The ArticleSummary at a list position."""
        segment, local = self._segment(self._order[pos])
        return segment.summaries_run(local, local + 1)

    def position_range(self, first: int | None, last: int | None) -> tuple[int, int]:
        """List positions [lo, hi) published within first..last (microseconds, inclusive,
        None for an open end): two binary searches over published.pos, which descends."""
        published = self._published_at
        lo = 0 if last is None else bisect.bisect_left(published, -last, key=_negative)
        hi = self.count if first is None else bisect.bisect_right(published, -first, key=_negative)
        return lo, max(lo, hi)

    def list_page(
        self, page: ListPage, category: str | None, start: int, stop: int
    ) -> tuple[int, list[Run[SegmentData]]]:
        """(total, runs of the page's records) of a list request: binary searches and slices."""
        first, last = page.first, page.last
        if category is None:
            lo, hi = self.position_range(first, last)
            total = hi - lo
            if start >= total:
                return total, []
            stop = min(stop, total)
            if not page.oldest:
                return total, self.runs(lo + start, lo + stop)
            base = self.count - hi  # the range is one block of the oldest-first order too
            return total, self.runs_at(self._oldest[base + start : base + stop])
        r = self._categories.get(category)
        if r is None:
            return 0, []
        if page.oldest:
            group = self._category_oldest[r.start : r.start + r.count]
            at = self._published_at.__getitem__
            i = 0 if first is None else bisect.bisect_left(group, first, key=at)
            j = len(group) if last is None else bisect.bisect_right(group, last, key=at)
        else:
            group = self._category_pos[r.start : r.start + r.count]
            lo, hi = self.position_range(first, last)
            i, j = bisect.bisect_left(group, lo), bisect.bisect_left(group, hi)
        total = max(0, j - i)
        return total, self.runs_at(group[i + start : min(i + stop, j)])

    def search_page(
        self,
        query: str,
        page: SearchPage,
        category: str | None,
        start: int,
        stop: int,
        highlight: bool = False,
    ) -> tuple[int, list[Run[SegmentData]], bytes, bytes | None]:
        """(total, runs of the page's records, facets JSON, highlights JSON or None) of a
        search request; highlights only when asked, for the page's records only.

        Filters and facets work on the numpy arrays of every match: the date range is a
        position range, categories a gather from category.of, facets one bincount."""
        compiled = compile_query(query, self._analyzer)
        pos, acc, titles = self._matches(query, compiled)
        if page.first is not None or page.last is not None:
            lo, hi = self.position_range(page.first, page.last)
            keep = (pos >= lo) & (pos < hi)
            pos, acc, titles = pos[keep], acc[keep], titles[keep]
        numbers = self._category_of[pos]
        counts = np.bincount(numbers, minlength=len(self._category_names))
        facets = orjson.dumps(
            {"category": {self._category_names[i]: int(counts[i]) for i in np.flatnonzero(counts)}}
        )
        if category is not None:
            number = self._category_number.get(category)
            keep = numbers == (-1 if number is None else number)
            pos, acc, titles = pos[keep], acc[keep], titles[keep]
        total, limit = int(pos.size), stop - start
        if page.order == "relevance":
            chosen = search.rank(pos, acc, titles, start, limit)[1]
        elif page.order == "newest":
            chosen = ranking.newest(pos, start, limit).tolist()
        else:
            chosen = ranking.oldest(pos, self._published, start, limit).tolist()
        runs = self.runs_at(chosen)
        highlights = None
        if highlight:  # each record of the page decoded and marked (app/search/highlight.py)
            marker = Highlighter(self._analyzer, compiled.positive_texts)
            highlights = orjson.dumps(
                [marker.highlight(orjson.loads(run.segment.record(run.start))) for run in runs]
            )
        return total, runs, facets, highlights

    def _matches(self, query: str, compiled: CompiledQuery) -> search.Matches:
        """search.scored_matches, kept in the bounded cache for queries with syntax."""
        if compiled.simple:
            return search.scored_matches(self._search_segments, compiled)
        found = self._match_cache.get(query)
        if found is None:
            found = search.scored_matches(self._search_segments, compiled)
            self._match_cache.put(query, found)
        return found

    def clear_search_cache(self) -> None:
        """Empties the cache of query matches (benchmarks time the uncached cost)."""
        self._match_cache.clear()

    def search(self, query: str, offset: int, limit: int) -> tuple[int, list[int]]:
        """(total, list positions of the page) for a search query."""
        return search.search(
            self._search_segments, compile_query(query, self._analyzer), offset, limit
        )

    def scored(self, query: str) -> dict[int, tuple[int, float]]:
        """Every match's list position -> (title-term count, score): for tests and tools."""
        pos, acc, titles = search.scored_matches(
            self._search_segments, compile_query(query, self._analyzer)
        )
        return dict(zip(pos.tolist(), zip(titles.tolist(), acc.tolist(), strict=True), strict=True))

    @property
    def segment_count(self) -> int:
        return len(self.segments)


@dataclass(frozen=True)
class SiteData:
    """What spans languages: the sitemap index and the news sitemap, each in every coding
    with its quoted identity ETag, the codec that compressed them, and the sitemap page size
    and public URLs the bundle was built with."""

    sitemap_index: tuple[dict[str, memoryview], str]
    news_sitemap: tuple[dict[str, memoryview], str]
    codec: str
    sitemap_page_urls: int
    public_urls: dict[str, str]
    # The news sitemap's entries, newest first: published_at (µs, descending) and the end of
    # each entry's line in its identity body (app/build/site.py).
    news_published: np.ndarray
    news_ends: list[int]
    news_head: int  # where the first entry starts (the XML declaration and <urlset> before)

    def news_window(self, since_micros: int) -> int:
        """How many news entries were published at or after `since_micros`."""
        descending = self.news_published
        return int(np.searchsorted(-descending, -since_micros, side="right"))

    @classmethod
    def from_manifest(cls, site: Mapping[str, Any], views: Mapping[str, memoryview]) -> SiteData:
        files = site["files"]
        page = int(site["sitemap_page_urls"])
        if page < 1:
            raise ValueError("sitemap_page_urls must be at least 1")

        def document(name: str) -> tuple[dict[str, memoryview], str]:
            variants = {e: views[files[fmt.site_file(name, e)]] for e in fmt.DOCUMENT_ENCODINGS}
            return variants, _quoted(variants[IDENTITY])

        news = document(fmt.NEWS_SITEMAP)
        published = np.asarray(site["news"]["published"], dtype=np.int64)
        ends = [int(e) for e in site["news"]["ends"]]
        size = len(news[0][IDENTITY])
        head = bytes(news[0][IDENTITY]).find(b"<url>") if ends else size - len(NEWS_TAIL)
        if (
            len(ends) != published.size
            or any(b <= a for a, b in itertools.pairwise(ends))
            or (ends and not 0 < head < ends[0] <= ends[-1] <= size)
            or np.any(np.diff(published) > 0)
        ):
            raise ValueError("news: entries do not match news.xml")
        return cls(
            document(fmt.SITEMAP_INDEX),
            news,
            str(site["codec"]),
            page,
            dict(site["public_urls"]),
            published,
            ends,
            head,
        )


def _quoted(body: bytes | memoryview) -> str:
    return f'"{hashlib.blake2b(body, digest_size=fmt.ETAG_BYTES).hexdigest()}"'


class Bundle:
    """A loaded bundle: the nine languages plus identity and provenance."""

    def __init__(
        self,
        path: Path,
        bundle_id: str,
        languages: dict[str, LanguageData],
        identity: Identity,
        views: dict[str, Mapped],
        site: SiteData,
        owners: dict[str, frozenset[str]],
        damage: dict[str, str] | None = None,
    ) -> None:
        self.site = site
        self.path = path
        self.bundle_id = bundle_id
        self.languages = languages
        self.identity = identity
        # object name -> its mapping and stat when mapped: the next generation reuses a
        # mapping whose file is still that same file, and find_damage compares the stat.
        self.views = views
        self.owners = owners  # language code or SITE -> the objects it reads
        # object name -> what is wrong with it; what reads it is Unavailable (empty: whole).
        self.damage = damage or {}

    def degraded(self, damage: Mapping[str, str]) -> Bundle:
        """This bundle without the objects in `damage`: the languages (or the site) that read
        them become Unavailable, the rest is shared unchanged. Their mappings are dropped
        (unmapped once the requests holding them finish) and never reused."""
        damage = {**self.damage, **damage}
        languages = {
            language: _unavailable(language, self.owners[language], damage, data)
            for language, data in self.languages.items()
        }
        site = _unavailable(SITE, self.owners[SITE], damage, self.site)
        views = {name: mapped for name, mapped in self.views.items() if name not in damage}
        return Bundle(
            self.path, self.bundle_id, languages, self.identity, views, site, self.owners, damage
        )

    def has_article(self, language: str, article_id: str) -> bool:
        data = self.languages.get(language)
        return data is not None and data.find(article_id) is not None

    def is_retracted(self, language: str, article_id: str) -> bool:
        data = self.languages.get(language)
        return data is not None and article_id in data.retracted

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        verify: Verify = "trusted",
        reuse: Bundle | None = None,
        manifest_name: str = fmt.MANIFEST,
        partial: bool = False,
        recheck: Collection[str] = (),
    ) -> Bundle:
        """Map and check a bundle; raises BundleError saying what is wrong.

        Objects the `reuse` bundle already maps (and checked) are taken from it. Every other
        object is checked per `verify` before anything is served from it, and so is every
        object in `recheck` (files found changed while served: verified.json's record of
        them is no longer evidence). With `partial`, an object that is missing, of the
        wrong size or fails its checksum does not fail the load: what reads it is left
        Unavailable and the problem is in `damage` (the manifest must still be sound).
        """
        if sys.byteorder != "little":
            raise BundleError("bundles are little-endian; this machine is not")
        try:
            dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise BundleError(f"cannot open bundle directory {path}: {exc.strerror}") from None
        damage: dict[str, str] = {}
        try:
            manifest, identity = _read_manifest(dir_fd, path, manifest_name)
            entries = manifest["objects"]
            owners = _owners(manifest, path)
            known = reuse.views if reuse is not None and verify == "trusted" else {}
            verified = _read_verified(dir_fd) if verify == "trusted" else {}
            views: dict[str, Mapped] = {}
            to_check: dict[str, memoryview] = {}
            for name in sorted(frozenset().union(*owners.values())):
                if name not in entries or not isinstance(entries[name], Mapping):
                    raise BundleError(f"{path}/{fmt.MANIFEST}: object {name} has no entry")
                try:
                    if (
                        name in known
                        and name not in recheck
                        and _stamp(dir_fd, path, name) == known[name].stamp
                    ):
                        views[name] = known[name]
                        continue
                    mapped = views[name] = _map_object(dir_fd, path, name, entries[name])
                except BundleError as exc:
                    if not partial:
                        raise
                    damage[name] = str(exc)
                    continue
                if verify != "trusted" or name in recheck or verified.get(name) != mapped.stamp:
                    to_check[name] = mapped.view
        finally:
            os.close(dir_fd)
        failed = _verify_contents(
            path, to_check, entries, "sha256" if verify == "sha256" else "crc32"
        )
        if failed and not partial:
            raise BundleError(next(iter(failed.values())))
        for name, problem in failed.items():
            damage[name] = problem
            del views[name]
        try:
            if bundle_id_for(manifest["languages"]) != manifest["bundle_id"]:
                raise BundleError(f"{path}: bundle_id does not match the languages' content")
        except (KeyError, TypeError, AttributeError) as exc:
            raise BundleError(f"{path}: malformed manifest: {exc!r}") from None
        mapped_views = {name: m.view for name, m in views.items()}
        languages = {}
        for language in LANGUAGES:
            if not damage.keys().isdisjoint(owners[language]):
                languages[language] = _unavailable(language, owners[language], damage, None)
                continue
            try:
                languages[language] = LanguageData(
                    language, manifest["languages"][language], mapped_views
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise BundleError(f"{path}: language {language}: {exc!r}") from None
        if not damage.keys().isdisjoint(owners[SITE]):
            site = _unavailable(SITE, owners[SITE], damage, None)
        else:
            try:
                site = SiteData.from_manifest(manifest["site"], mapped_views)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise BundleError(f"{path}: site: {exc!r}") from None
        return cls(path, manifest["bundle_id"], languages, identity, views, site, owners, damage)


def find_damage(bundle: Bundle, *, moved: bool) -> dict[str, str]:
    """The served objects whose file changed since it was mapped, from stat alone: no byte
    of a mapping is read (reading past the end of a truncated one raises SIGBUS).

    A file changed in place (same inode: truncated, rewritten, even to the same mtime)
    changes what the mapping shows. With `moved`, a file that vanished or was replaced by
    another inode also counts: the mapping still holds the checked bytes, but the directory
    no longer does, so no new worker could load it (pass it only while the manifest on disk
    is the served one: a directory swapped for another is the reload's business)."""
    damage: dict[str, str] = {}
    try:
        dir_fd = os.open(bundle.path / fmt.OBJECTS, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        if moved:
            return dict.fromkeys(bundle.views, f"{fmt.OBJECTS}/: {exc.strerror}")
        return damage
    try:
        for name, (_, (ino, mtime_ns, size), ctime_ns) in bundle.views.items():
            try:
                st = os.stat(name, dir_fd=dir_fd)
            except OSError as exc:
                if moved:
                    damage[name] = f"{fmt.OBJECTS}/{name}: {exc.strerror}"
                continue
            if st.st_ino != ino:
                if moved:
                    damage[name] = f"{fmt.OBJECTS}/{name}: replaced by another file"
            elif st.st_size != size:
                damage[name] = f"{fmt.OBJECTS}/{name}: size changed from {size} to {st.st_size}"
            elif st.st_mtime_ns != mtime_ns or st.st_ctime_ns != ctime_ns:
                damage[name] = f"{fmt.OBJECTS}/{name}: changed in place since it was checked"
    finally:
        os.close(dir_fd)
    return damage


def _unavailable(owner: str, names: frozenset[str], damage: Mapping[str, str], data: Any) -> Any:
    """`data` if none of its objects is damaged, else an Unavailable saying what is."""
    if damage.keys().isdisjoint(names):
        return data
    what = "the sitemaps" if owner == SITE else f"language {owner!r}"
    return Unavailable(
        f"Service unavailable: this instance's bundle files for {what} are damaged; "
        "it serves them again once they are repaired"
    )


def check_objects(path: Path, manifest: dict[str, Any]) -> None:
    """What Bundle.load checks of every object a manifest names (size; CRC-32 unless
    verified.json vouches for the file), without loading the languages: the builder reads
    article bytes of the bundle it updates, and must not build on a damaged one."""
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        entries = manifest["objects"]
        verified = _read_verified(dir_fd)
        to_check: dict[str, memoryview] = {}
        for name in sorted(frozenset().union(*_owners(manifest, path).values())):
            if name not in entries or not isinstance(entries[name], Mapping):
                raise BundleError(f"{path}/{fmt.MANIFEST}: object {name} has no entry")
            mapped = _map_object(dir_fd, path, name, entries[name])
            if verified.get(name) != mapped.stamp:
                to_check[name] = mapped.view
    finally:
        os.close(dir_fd)
    failed = _verify_contents(path, to_check, entries, "crc32")
    if failed:
        raise BundleError(next(iter(failed.values())))


def bundle_id_for(languages: Mapping[str, Mapping[str, Any]]) -> str:
    """Derived from what is served (each language's content hash), not from file layout: a
    merge or an incremental build serving the same articles keeps the id."""
    h = hashlib.sha256(f"{fmt.FORMAT_NAME}\0{fmt.FORMAT_VERSION}\n".encode())
    for language in sorted(languages):
        meta = languages[language]
        h.update(f"{language}\0{meta['content_hash']}\0{meta['codec']}\n".encode())
    return h.hexdigest()[:20]


def _owners(manifest: dict[str, Any], path: Path) -> dict[str, frozenset[str]]:
    """Each language's objects, and the site's (SITE), as the manifest names them."""
    owners: dict[str, frozenset[str]] = {}
    for language in LANGUAGES:
        meta = manifest["languages"].get(language)
        if not isinstance(meta, Mapping):
            raise BundleError(f"{path}: manifest has no language {language!r}")
        try:
            names = set(meta["files"].values())
            names.update(meta["feeds"].values())
            for desc in meta["segments"]:
                names.update(desc["files"].values())
        except (KeyError, TypeError, AttributeError) as exc:
            raise BundleError(f"{path}: language {language}: malformed entry ({exc!r})") from None
        owners[language] = frozenset(names)
    try:
        owners[SITE] = frozenset(manifest["site"]["files"].values())
    except (KeyError, TypeError, AttributeError) as exc:
        raise BundleError(f"{path}: site: malformed entry ({exc!r})") from None
    return owners


def _read_manifest(dir_fd: int, path: Path, name: str) -> tuple[dict[str, Any], Identity]:
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        raw = fh.read()
    try:
        manifest = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BundleError(f"{path}/{fmt.MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt.FORMAT_NAME:
        raise BundleError(f"{path}/{fmt.MANIFEST}: not a {fmt.FORMAT_NAME} manifest")
    version = manifest.get("format_version")
    if version != fmt.FORMAT_VERSION:
        raise BundleError(
            f"{path}: bundle format version {version!r}, this server reads version "
            f"{fmt.FORMAT_VERSION}; rebuild the bundle with this release's builder"
        )
    for key, kind in (("bundle_id", str), ("objects", dict), ("languages", dict)):
        if not isinstance(manifest.get(key), kind):
            raise BundleError(f"{path}/{fmt.MANIFEST}: field {key!r} missing or mistyped")
    return manifest, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _read_verified(dir_fd: int) -> dict[str, list[int]]:
    try:
        fd = os.open(fmt.VERIFIED, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        try:
            record = orjson.loads(fh.read())
        except orjson.JSONDecodeError:
            return {}
    return record if isinstance(record, dict) else {}


def _checksum(view: memoryview, verify: Literal["crc32", "sha256"]) -> str | int:
    if verify == "sha256":
        return hashlib.sha256(view).hexdigest()
    return zlib.crc32(view)


def _verify_contents(
    path: Path,
    files: Mapping[str, memoryview],
    entries: Mapping[str, Mapping[str, Any]],
    verify: Literal["crc32", "sha256"],
) -> dict[str, str]:
    """The objects whose checksum does not match, largest first, each with the problem."""
    if not files:
        return {}
    # Both checksums release the GIL on large buffers: hash files on every core at once.
    names = sorted(files, key=lambda name: -len(files[name]))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        sums = dict(zip(names, pool.map(lambda n: _checksum(files[n], verify), names), strict=True))
    return {
        name: f"{path}/{fmt.OBJECTS}/{name}: checksum mismatch ({verify}): corrupted file"
        for name in names
        if sums[name] != (name if verify == "sha256" else entries[name].get("crc32"))
    }


def _stamp(dir_fd: int, path: Path, name: str) -> list[int]:
    try:
        st = os.stat(f"{fmt.OBJECTS}/{name}", dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{fmt.OBJECTS}/{name}: {exc.strerror}") from None
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _os_problem(exc: OSError) -> str:
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        # Python's mmap keeps a descriptor per mapping (docs/operations.md, "Open files").
        return (
            f"{exc.strerror}: every mapped bundle object holds a file descriptor; raise the "
            "open-file limit (ulimit -n, LimitNOFILE, the container's nofile)"
        )
    return str(exc.strerror)


def _map_object(dir_fd: int, path: Path, name: str, entry: Mapping[str, Any]) -> Mapped:
    """The object's mapping and the stat it had."""
    if not name.isalnum():
        raise BundleError(f"{path}: manifest names an invalid object {name!r}")
    rel = f"{fmt.OBJECTS}/{name}"
    try:
        fd = os.open(rel, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{rel}: {_os_problem(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BundleError(f"{path}/{rel}: not a regular file")
        if st.st_size != entry.get("size"):
            raise BundleError(
                f"{path}/{rel}: size {st.st_size}, manifest says {entry.get('size')} "
                "(truncated or replaced file)"
            )
        if st.st_size == 0:
            view = _EMPTY
        else:
            try:
                view = memoryview(mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ))
            except OSError as exc:
                raise BundleError(f"{path}/{rel}: {_os_problem(exc)}") from None
    finally:
        os.close(fd)
    return Mapped(view, [st.st_ino, st.st_mtime_ns, st.st_size], st.st_ctime_ns)
