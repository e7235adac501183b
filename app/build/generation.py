"""A language's generation files: what is served, in which order, under which ids.

Rebuilt by every publish from the segments' small per-document arrays (a few bytes per
article: published time, id, category, ETag), never from article text. The content hash is
derived from what is served (each article's ETag, in list order, plus the index versions), so
an incremental build and a from-scratch build of the same input get the same ETags.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import orjson

from app.build.merge import SegmentReader
from app.bundle import format as fmt
from app.bundle.objects import ObjectEntry, ObjectStore
from app.public_urls import PublicUrls
from app.search import layout
from app.search.analyzers import ANALYZER_VERSION
from app.syndication import EPOCH, FEED_ENTRIES, FEED_FORMATS, render_feed


def build_generation(
    store: ObjectStore,
    language: str,
    segments: list[dict[str, Any]],
    deleted: list[np.ndarray],
    urls: PublicUrls,
) -> tuple[dict[str, Any], dict[str, ObjectEntry]]:
    """The manifest entry of one language and the entries of its new generation objects."""
    rows: list[tuple[int, bytes, int]] = []  # (-published, id, gid) of every live document
    categories: list[str] = []  # by gid
    by_story: list[tuple[bytes, int]] = []  # (story id, gid) of live documents with a story
    etags: list[memoryview] = []
    readers: list[SegmentReader] = []
    base = 0
    for desc, dead in zip(segments, deleted, strict=True):
        reader = SegmentReader(store, desc)
        readers.append(reader)
        published = reader.array(fmt.PUBLISHED, "<i8").tolist()
        ids = reader.ids()
        live = np.ones(reader.docs, dtype=bool)
        live[dead] = False
        rows.extend((-published[i], ids[i], base + i) for i in np.flatnonzero(live).tolist())
        categories.extend(reader.categories())
        by_story.extend(_stories(reader, live, base))
        etags.append(reader.raw(fmt.ETAGS_BIN))
        base += reader.docs
    rows.sort()
    order = np.asarray([gid for _, _, gid in rows], dtype="<u4")
    by_id = sorted((article_id, gid) for _, article_id, gid in rows)
    ids_off = np.concatenate(([0], np.cumsum([len(i) for i, _ in by_id], dtype=np.int64)))

    names = sorted({categories[gid] for gid in order.tolist()})
    number = {name: i for i, name in enumerate(names)}
    category_of_position = np.asarray(
        [number[categories[g]] for g in order.tolist()], dtype=np.int64
    )
    grouped = np.argsort(category_of_position, kind="stable").astype("<u4")
    counts = np.bincount(category_of_position, minlength=len(names)).tolist()
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist() if names else []

    all_etags = np.frombuffer(b"".join(etags), dtype=np.dtype((np.void, fmt.ETAG_BYTES)))
    content = hashlib.sha256(
        f"{fmt.FORMAT_VERSION}\0{layout.FORMAT_VERSION}\0{ANALYZER_VERSION}\0{language}\0".encode()
    )
    content.update(orjson.dumps(urls.manifest(), option=orjson.OPT_SORT_KEYS))
    content.update(all_etags[order].tobytes())

    by_story.sort()
    story_off = np.concatenate(([0], np.cumsum([len(s) for s, _ in by_story], dtype=np.int64)))
    feed_docs, feeds_json = _feeds(language, urls, readers, order, names, grouped, starts, counts)

    files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}
    for name, data in (
        (fmt.ORDER, order.tobytes()),
        (fmt.IDS_BIN, b"".join(i for i, _ in by_id)),
        (fmt.IDS_OFF, ids_off.astype("<u8").tobytes()),
        (fmt.IDS_GID, np.asarray([g for _, g in by_id], dtype="<u4").tobytes()),
        (fmt.CATEGORY_POS, grouped.tobytes()),
        (fmt.CATEGORIES_JSON, orjson.dumps(names)),
        (fmt.STORY_IDS_BIN, b"".join(s for s, _ in by_story)),
        (fmt.STORY_IDS_OFF, story_off.astype("<u8").tobytes()),
        (fmt.STORY_IDS_GID, np.asarray([g for _, g in by_story], dtype="<u4").tobytes()),
        (fmt.FEEDS_JSON, feeds_json),
    ):
        obj, entry = store.put(data)
        files[name] = obj
        entries[obj] = entry
    feeds: dict[str, str] = {}
    for category, data in feed_docs.items():
        obj, entry = store.put(data)
        feeds[category] = obj
        entries[obj] = entry
    meta = {
        "articles": len(rows),
        "content_hash": content.hexdigest()[:20],
        "categories": [[n, s, c] for n, s, c in zip(names, starts, counts, strict=True)],
        "segments": segments,
        "deleted": [int(d.size) for d in deleted],
        "files": files,
        "feeds": feeds,
    }
    return meta, entries


def _stories(reader: SegmentReader, live: np.ndarray, base: int) -> list[tuple[bytes, int]]:
    """(story id, gid) of a segment's live documents that have a story; only those are
    decoded (most articles have none)."""
    off = reader.offsets(fmt.STORIES_OFF)
    blob = reader.raw(fmt.STORIES_BIN)
    wanted = np.flatnonzero(live & (np.diff(off) > 0)).tolist()
    starts, ends = off[:-1], off[1:]
    return [(blob[int(starts[i]) : int(ends[i])].tobytes(), base + i) for i in wanted]


def _feeds(
    language: str,
    urls: PublicUrls,
    readers: list[SegmentReader],
    order: np.ndarray,
    names: list[str],
    grouped: np.ndarray,
    starts: list[int],
    counts: list[int],
) -> tuple[dict[str, bytes], bytes]:
    """Every feed of the language, rendered: the newest FEED_ENTRIES articles of all and of
    each category. Costs (1 + categories) x 50 articles per publish, whatever the archive.
    Returns one object per category ("" for all: its three documents end to end) and the
    index of where each document is: a publish ships only the feeds it changed."""
    bases = np.cumsum([0] + [r.docs for r in readers]).tolist()
    parsed: dict[int, dict[str, Any]] = {}

    def article(position: int) -> dict[str, Any]:
        gid = int(order[position])
        if gid not in parsed:
            n = int(np.searchsorted(bases, gid, side="right")) - 1
            parsed[gid] = orjson.loads(readers[n].article(gid - bases[n]))
        return parsed[gid]

    selections: list[tuple[str | None, list[int]]] = [
        (None, list(range(min(FEED_ENTRIES, order.size))))
    ]
    for name, start, count in zip(names, starts, counts, strict=True):
        selections.append((name, grouped[start : start + min(count, FEED_ENTRIES)].tolist()))
    docs: dict[str, bytes] = {}
    index: dict[str, dict[str, list[Any]]] = {}
    updated_all = EPOCH
    for category, positions in selections:
        entries = [article(p) for p in positions]
        updated = max((a["updated_at"] for a in entries), default=EPOCH)
        if category is None:
            updated_all = updated
        where: dict[str, list[Any]] = {}
        blob = bytearray()
        for kind in FEED_FORMATS:
            body = render_feed(kind, urls, language, category, entries, updated)
            etag = hashlib.blake2b(body, digest_size=fmt.ETAG_BYTES).hexdigest()
            where[kind] = [len(blob), len(blob) + len(body), etag]
            blob += body
        key = "" if category is None else category
        index[key] = where
        docs[key] = bytes(blob)
    return docs, orjson.dumps({"updated": updated_all, "feeds": index})
