"""One language of a loaded bundle and the queries over it: id lookup, list, category and
search pages, feeds, retractions and the corrections log (docs/api.md).

A query answers with list positions turned into runs of segment records
(app.bundle.segment): binary searches and numpy gathers over the generation's small arrays
(list order, published times, category groups), never a parse of article JSON, except the
page's records when search highlights are asked for.
"""

from __future__ import annotations

import bisect
import itertools
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle.changes import ChangeLog
from app.bundle.errors import BundleError
from app.bundle.heads import Heads
from app.bundle.id_index import IdIndex
from app.bundle.manifest import Language
from app.bundle.segment import SEPARATORS, Run, SegmentReader, last_modified
from app.compression import IDENTITY
from app.search import searcher as search
from app.search.analyzers import get_analyzer
from app.search.cache import MatchCache
from app.search.highlight import Highlighter
from app.search.query import CompiledQuery, compile_query
from app.syndication import FEED_FORMATS

# How many of the newest records' Last-Modified values a language works out at load: at
# least latest's largest limit (app/models/articles.py, LIMIT_MAX; a test holds it).
HEAD_DATED = 64


# A Run made without NamedTuple's __new__, a Python function (half the cost): a category or
# search page makes one per record, on every request.
_run = tuple.__new__


def _negative(value: int) -> int:
    return -value


class ListPage(NamedTuple):
    """What a list request selects beyond category and page (docs/api.md §7). Tuples: one
    is made per request."""

    first: int | None = None  # published microseconds, inclusive; None: open
    last: int | None = None
    oldest: bool = False
    summary: bool = False


class SearchPage(NamedTuple):
    """What a search request selects beyond query, category and page. Its repr is part of
    the search ETag's key (app.resources.articles): the same as a dataclass's."""

    first: int | None = None
    last: int | None = None
    order: str = "relevance"  # relevance | newest | oldest
    summary: bool = False


@dataclass(frozen=True, slots=True)
class CategoryRange:
    start: int
    count: int


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


class LanguageData:
    """One language of a bundle: its segments and the generation that orders them."""

    def __init__(
        self,
        language: str,
        meta: Language,
        views: Mapping[str, memoryview],
    ) -> None:
        self.language = language
        self.count = meta.articles
        self.content_hash = meta.content_hash
        self.codec = meta.codec  # app.compression.CODEC_ID of the builder
        where = f"language {language}"
        gen = {name: views[obj] for name, obj in meta.files.items()}
        self.segments: list[SegmentReader] = []
        self.bases: list[int] = []
        searchers: list[search.Searcher] = []
        base = 0
        for n, desc in enumerate(meta.segments):
            segment = SegmentReader(views, desc, f"{where} segment {n}")
            segment.heads = _heads(language, segment, desc.files, f"{where} segment {n}")
            self.segments.append(segment)
            self.bases.append(base)
            try:
                searchers.append(search.Searcher(language, segment.search_files()))
            except ValueError as exc:
                raise BundleError(f"{where} segment {n}: {exc}") from None
            if searchers[-1].ndocs != segment.docs:
                raise BundleError(
                    f"{where} segment {n}: index holds {searchers[-1].ndocs} documents"
                )
            base += segment.docs
        self._order = gen[fmt.ORDER].cast(fmt.POSITION_TYPECODE)
        order = self._order_array = np.frombuffer(self._order, dtype="<u4")
        self._bases_array = np.asarray(self.bases, dtype=np.int64)
        if order.size != self.count or (order.size and int(order.max()) >= base):
            raise BundleError(f"{where}/{fmt.ORDER}: does not match {self.count} articles")
        # Last-Modified of the first k list positions (latest?limit=k), k <= HEAD_DATED: fixed
        # per bundle, so worked out once here (about 2,000 values read) rather than on
        # every request, by the rule every page follows (segment.last_modified).
        head = self.runs_at(range(min(HEAD_DATED, self.count)))
        self._head_modified = [last_modified(head[:k]) for k in range(len(head) + 1)]
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
        # Queries compile with the segments' pair words, one list a language (merges and
        # incremental builds keep it: app/search/pair_words.py).
        analyzers = {searcher.analyzer.pair_words for searcher in searchers}
        if len(analyzers) > 1:
            raise BundleError(f"{where}: segments index different pair words")
        self._analyzer = searchers[0].analyzer if searchers else get_analyzer(language)
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
        # encoding -> the categories body in it (identity included)
        self.categories_encoded: dict[str, bytes] = {IDENTITY: gen[fmt.CATEGORIES_JSON].tobytes()}
        for encoding, name in fmt.CATEGORIES_ENCODED.items():
            self.categories_encoded[encoding] = gen[name].tobytes()
        self._category_pos = gen[fmt.CATEGORY_POS].cast(fmt.POSITION_TYPECODE)
        self._categories: dict[str, CategoryRange] = {
            name: CategoryRange(start, count) for name, start, count in meta.categories
        }
        if sum(r.count for r in self._categories.values()) != len(self._category_pos):
            raise BundleError(f"{where}/{fmt.CATEGORY_POS}: size does not match")
        self._category_names = [name for name, _, _ in meta.categories]
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
        if set(meta.feeds) != set(feeds["feeds"]):
            raise BundleError(f"{where}/{fmt.FEEDS_JSON}: does not match the feed objects")
        for name, index in feeds["feeds"].items():
            blob = views[meta.feeds[name]]
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
        self.changes = ChangeLog(
            language,
            gen,
            (gen[fmt.IDS_BIN], gen[fmt.IDS_OFF], gen[fmt.IDS_GID]),
            list(self.retracted),  # retractions.json is sorted by id
            [segment.updated for segment in self.segments],
            where,
        )
        # What a change feed answer depends on beyond the request: the log's objects (their
        # names are digests of their bytes) and what is served.
        files = meta.files
        self.changes_key = f"{files[fmt.CHANGES_LOG][:16]}{files[fmt.CHANGES_JSON][:16]}"

    # -- lookups -----------------------------------------------------------------------

    def _segment(self, gid: int) -> tuple[SegmentReader, int]:
        if len(self.bases) == 1:
            return self.segments[0], gid
        n = bisect.bisect_right(self.bases, gid) - 1
        return self.segments[n], gid - self.bases[n]

    def find(self, article_id: str) -> int | None:
        """The gid of the article with this id, or None."""
        return self._ids.get(article_id)

    def record_by_gid(self, gid: int) -> memoryview:
        segment, local = self._segment(gid)
        return segment.record(local)

    def article(self, gid: int) -> tuple[Run[SegmentReader], str, str, str]:
        """The article `gid` as a run, and its ETag, Last-Modified and Surrogate-Key values
        (written by the builder: app.bundle.heads)."""
        segment, local = self._segment(gid)
        heads = segment.heads
        assert heads is not None  # every segment of a LanguageData has them
        return (Run(segment, local, local + 1), *heads.of(local))

    def etag_by_gid(self, gid: int) -> str:
        segment, local = self._segment(gid)
        return segment.etags[local * fmt.ETAG_BYTES : (local + 1) * fmt.ETAG_BYTES].hex()

    def _run(self, start: int, stop: int) -> tuple[SegmentReader, int, int] | None:
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

    def runs(self, start: int, stop: int) -> list[Run[SegmentReader]]:
        """List positions start..stop-1 as runs: one when they are one run of a segment."""
        if start >= stop:
            return []
        run = self._run(start, stop)
        if run is not None:
            return [Run(*run)]
        return self.runs_at(range(start, stop))

    def head_modified(self, count: int) -> str | None:
        """Last-Modified of a page of the first `count` list positions (app.bundle.segment's
        last_modified of their runs)."""
        count = min(count, self.count)
        if count < len(self._head_modified):
            return self._head_modified[count]
        return last_modified(self.runs(0, count))

    def runs_at(self, positions: Sequence[int] | memoryview) -> list[Run[SegmentReader]]:
        """One run per list position (search hits, category pages)."""
        gids = map(self._order.__getitem__, positions)
        if len(self.bases) == 1:
            segment = self.segments[0]
            return [_run(Run, (segment, gid, gid + 1)) for gid in gids]
        out = []
        for gid in gids:
            segment, local = self._segment(gid)
            out.append(_run(Run, (segment, local, local + 1)))
        return out

    def run_by_gid(self, gid: int) -> Run[SegmentReader]:
        segment, local = self._segment(gid)
        return Run(segment, local, local + 1)

    def coalesced_runs(self, start: int, stop: int) -> list[Run[SegmentReader]]:
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

    def position_range(self, first: int | None, last: int | None) -> tuple[int, int]:
        """List positions [lo, hi) published within first..last (microseconds, inclusive,
        None for an open end): two binary searches over published.pos, which descends."""
        published = self._published_at
        lo = 0 if last is None else bisect.bisect_left(published, -last, key=_negative)
        hi = self.count if first is None else bisect.bisect_right(published, -first, key=_negative)
        return lo, max(lo, hi)

    def list_page(
        self, page: ListPage, category: str | None, start: int, stop: int
    ) -> tuple[int, list[Run[SegmentReader]]]:
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
    ) -> tuple[int, list[Run[SegmentReader]], bytes, bytes | None]:
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
        names = self._category_names  # one list of ints: numpy scalars cost a call each
        facets = orjson.dumps(
            {"category": {names[i]: n for i, n in enumerate(counts.tolist()) if n}}
        )
        if category is not None:
            number = self._category_number.get(category)
            keep = numbers == (-1 if number is None else number)
            pos, acc, titles = pos[keep], acc[keep], titles[keep]
        total, limit = int(pos.size), stop - start
        if page.order == "relevance":
            chosen = search.rank(pos, acc, titles, start, limit)[1]
        elif page.order == "newest":
            chosen = _newest(pos, start, limit).tolist()
        else:
            chosen = _oldest(pos, self._published, start, limit).tolist()
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
        """Empties the cache of query matches (bench/search_cost.py times the uncached cost)."""
        self._match_cache.clear()

    def scored(self, query: str) -> dict[int, tuple[int, float]]:
        """Every match's list position -> (title-term count, score): for tests and tools."""
        pos, acc, titles = search.scored_matches(
            self._search_segments, compile_query(query, self._analyzer)
        )
        return dict(zip(pos.tolist(), zip(titles.tolist(), acc.tolist(), strict=True), strict=True))


# A segment's heads.txt object -> its Heads, while a loaded generation serves it: a publish
# loads the segments it kept again, and finds their values here, decoded once (objects are
# named by their contents).
_HEADS: weakref.WeakValueDictionary[str, Heads] = weakref.WeakValueDictionary()


def _heads(language: str, segment: SegmentReader, files: Mapping[str, str], where: str) -> Heads:
    heads = _HEADS.get(files[fmt.HEADS])
    if heads is None:
        heads = Heads(segment.raw(fmt.HEADS), language, segment.docs, where)
        _HEADS[files[fmt.HEADS]] = heads
    return heads


# Search matches in date order (relevance is app.search.searcher.rank), after filtering.
def _newest(pos: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """List order is newest first (published desc, id asc): ascending positions."""
    want = offset + limit
    if want < pos.size:
        pos = np.partition(pos, want - 1)[:want]
    return np.sort(pos)[offset:want]


def _oldest(pos: np.ndarray, published: np.ndarray, offset: int, limit: int) -> np.ndarray:
    """Published asc, then id asc (= list position asc among equal times)."""
    return pos[np.lexsort((pos, published[pos]))][offset : offset + limit]
