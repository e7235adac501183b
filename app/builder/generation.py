"""A language's generation files: what is served, in which order, under which ids.

Rebuilt by every publish from the segments' small per-document arrays (a few bytes per
article: published time, id, category, story, ETag), never from article text, except the
feeds, which render the newest articles (and are reused when those did not change). The
content hash is derived from what is served (each article's ETag, in list order, plus the
index versions and the public URLs), so an incremental build and a from-scratch build of the
same input get the same ETags.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import orjson

from app import versions
from app.builder import changes, retractions
from app.builder.retractions import RetractedArticle
from app.bundle import format as fmt
from app.bundle.id_index import build_table
from app.bundle.manifest import Language, Segment
from app.bundle.objects import ObjectEntry, ObjectStore
from app.bundle.segment import SegmentReader
from app.compression import CODEC_ID, precompress
from app.public_urls import PublicUrls
from app.syndication import EPOCH, FEED_ENTRIES, FEED_FORMATS, render_feed


def build_generation(
    store: ObjectStore,
    language: str,
    segments: list[Segment],
    deleted: list[np.ndarray],
    urls: PublicUrls,
    previous: Language | None = None,
    retracted: list[RetractedArticle] | None = None,
    publish: changes.Publish | None = None,
) -> tuple[Language, dict[str, ObjectEntry]]:
    """The manifest entry of one language and the entries of its new generation objects.
    `previous` is the language's entry in the bundle being updated: its feeds are reused
    where their articles did not change. `retracted`: the language's retracted articles.
    `publish`: what the change feed records of this build (app/builder/changes.py)."""
    by_story: list[tuple[bytes, int]] = []  # (story id, gid) of live documents with a story
    etags: list[memoryview] = []
    readers: list[SegmentReader] = []
    alive: list[np.ndarray] = []
    base = 0
    for desc, dead in zip(segments, deleted, strict=True):
        reader = SegmentReader(store, desc)
        readers.append(reader)
        live = np.ones(reader.docs, dtype=bool)
        live[dead] = False
        alive.append(live)
        by_story.extend((story, base + local) for local, story in reader.with_story(live))
        etags.append(reader.etags)
        base += reader.docs
    # Every publish orders the language's whole archive again: one sort of its ids, the rest
    # in numpy by gid, so no Python step per article beyond listing the ids.
    ids = [i for reader in readers for i in reader.ids()]  # by gid
    is_live = np.concatenate(alive) if alive else np.zeros(0, dtype=bool)
    by_bytes = np.asarray(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    id_order = by_bytes[is_live[by_bytes]]  # the live gids, their ids bytewise
    rank = np.empty(len(ids), dtype=np.int64)
    rank[by_bytes] = np.arange(len(ids))
    live_gids = np.flatnonzero(is_live)
    published_all = np.concatenate([r.published() for r in readers] or [np.zeros(0, "<i8")])
    # List order: published desc, then id asc (ids are unique among live documents).
    order = live_gids[np.lexsort((rank[live_gids], -published_all[live_gids]))].astype("<u4")
    served_ids = [ids[g] for g in id_order.tolist()]
    ids_off = np.concatenate(([0], np.cumsum([len(i) for i in served_ids], dtype=np.int64)))

    # The categories of the live articles: a sorted subset of the segments' sorted names.
    category_names, category_of = _categories(readers)
    used = np.unique(category_of[order])
    names = [category_names[c] for c in used.tolist()]
    renumber = np.full(len(category_names), -1, dtype=np.int64)
    renumber[used] = np.arange(used.size)
    category_of_position = renumber[category_of[order]]
    grouped = np.argsort(category_of_position, kind="stable").astype("<u4")
    published_pos = published_all[order].astype("<i8")
    # Oldest first: published asc, then list position asc (= id asc among equal times).
    oldest = np.lexsort((np.arange(order.size), published_pos)).astype("<u4")
    grouped_oldest = oldest[np.argsort(category_of_position[oldest], kind="stable")]
    counts = np.bincount(category_of_position, minlength=len(names)).tolist()
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist() if names else []

    all_etags = np.frombuffer(b"".join(etags), dtype=np.dtype((np.void, fmt.ETAG_BYTES)))
    content = hashlib.sha256(
        f"{versions.BUNDLE_CONTENT_VERSION}\0{versions.SEARCH_INDEX_FORMAT_VERSION}"
        f"\0{versions.SEARCH_ANALYZER_VERSION}\0{language}\0".encode()
    )
    content.update(orjson.dumps(urls.manifest(), option=orjson.OPT_SORT_KEYS))
    content.update(all_etags[order].tobytes())
    trust_files, trust_served = retractions.build_files(
        store, language, retracted or [], readers, alive, previous
    )
    content.update(trust_served)

    change_files = changes.build_files(
        store,
        language,
        publish or changes.Publish("00" * 8, 0, 0, fresh=True, candidates={}),
        previous,
        served_ids,
        id_order.tolist(),
        all_etags,
        retracted or [],
    )

    by_story.sort()
    story_off = np.concatenate(([0], np.cumsum([len(s) for s, _ in by_story], dtype=np.int64)))
    selections: list[tuple[str | None, np.ndarray]] = [(None, order[:FEED_ENTRIES])]
    for name, start, count in zip(names, starts, counts, strict=True):
        selections.append((name, order[grouped[start : start + min(count, FEED_ENTRIES)]]))
    feeds_json, feeds, entries = _Feeds(store, language, urls, readers, all_etags, previous).build(
        selections
    )

    files: dict[str, str] = {}
    categories_json = orjson.dumps(names)
    encoded = precompress(categories_json)
    for name, data in (
        (fmt.ORDER, order.tobytes()),
        (fmt.IDS_BIN, b"".join(served_ids)),
        (fmt.IDS_OFF, ids_off.astype("<u8").tobytes()),
        (fmt.IDS_GID, id_order.astype("<u4").tobytes()),
        (fmt.IDS_HASH, build_table(served_ids)),
        (fmt.CATEGORY_POS, grouped.tobytes()),
        (fmt.CATEGORIES_JSON, categories_json),
        *((fmt.CATEGORIES_ENCODED[e], encoded[e]) for e in sorted(fmt.CATEGORIES_ENCODED)),
        (fmt.PUBLISHED_POS, published_pos.tobytes()),
        (fmt.OLDEST_POS, oldest.tobytes()),
        (fmt.CATEGORY_OF_POS, category_of_position.astype("<u4").tobytes()),
        (fmt.CATEGORY_OLDEST, grouped_oldest.astype("<u4").tobytes()),
        (fmt.STORY_IDS_BIN, b"".join(s for s, _ in by_story)),
        (fmt.STORY_IDS_OFF, story_off.astype("<u8").tobytes()),
        (fmt.STORY_IDS_GID, np.asarray([g for _, g in by_story], dtype="<u4").tobytes()),
        (fmt.FEEDS_JSON, feeds_json),
        *trust_files,
        *change_files,
    ):
        obj, entry = store.put(data)
        files[name] = obj
        entries[obj] = entry
    meta = Language(
        articles=int(order.size),
        retracted=len(retracted or []),
        content_hash=content.hexdigest()[:20],
        codec=CODEC_ID,
        categories=tuple(zip(names, starts, counts, strict=True)),
        segments=tuple(segments),
        deleted=tuple(int(d.size) for d in deleted),
        files=files,
        feeds=feeds,
    )
    return meta, entries


def _categories(readers: list[SegmentReader]) -> tuple[list[str], np.ndarray]:
    """(every category name of the segments, sorted; each document's index into it, by gid)."""
    tables = [reader.category_table() for reader in readers]
    names = sorted({name for local, _ in tables for name in local})
    where = {name: i for i, name in enumerate(names)}
    parts = [
        np.asarray([where[name] for name in local], dtype=np.int64)[numbers]
        for local, numbers in tables
        if numbers.size
    ]
    return names, np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class _Feeds:
    """Every feed of a language: the newest FEED_ENTRIES articles of all and of each category,
    each in Atom, RSS and JSON Feed, each of those in every content coding.

    Rendering and compressing costs (1 + categories) x 3 documents of 50 articles, whatever
    the archive, and brotli makes it the larger part of a publish. So each feed carries a key:
    a digest of everything it is rendered from (the renderer and codec versions, the public
    URLs, language, category, and its articles' ETags, which are digests of their JSON). A
    feed whose key is in the previous generation is that object again, byte for byte, as a
    from-scratch build would render it: a publish renders, compresses and ships only the
    feeds whose articles changed.
    """

    def __init__(
        self,
        store: ObjectStore,
        language: str,
        urls: PublicUrls,
        readers: list[SegmentReader],
        etags: np.ndarray,
        previous: Language | None,
    ) -> None:
        self.store = store
        self.language = language
        self.urls = urls
        self.readers = readers
        self.bases = np.cumsum([0] + [r.docs for r in readers]).tolist()
        self.etags = etags
        self.parsed: dict[int, dict[str, Any]] = {}
        self.salt = orjson.dumps(
            [versions.FEED_RENDER_VERSION, CODEC_ID, urls.manifest(), language],
            option=orjson.OPT_SORT_KEYS,
        )
        self.previous: dict[str, Any] = {}
        self.previous_objects: Mapping[str, str] = {}
        if previous is not None:
            raw = store.path(previous.files[fmt.FEEDS_JSON]).read_bytes()
            self.previous = orjson.loads(raw)["feeds"]
            self.previous_objects = previous.feeds

    def _article(self, gid: int) -> dict[str, Any]:
        parsed = self.parsed.get(gid)
        if parsed is None:  # most articles are in two feeds: all, and their category's
            n = int(np.searchsorted(self.bases, gid, side="right")) - 1
            parsed = self.parsed[gid] = orjson.loads(self.readers[n].record(gid - self.bases[n]))
        return parsed

    def build(
        self, selections: list[tuple[str | None, np.ndarray]]
    ) -> tuple[bytes, dict[str, str], dict[str, ObjectEntry]]:
        """(feeds.json, category -> object, entries of the objects written); `selections`
        are (category or None for all, gids newest first)."""
        index: dict[str, Any] = {}
        objects: dict[str, str] = {}
        entries: dict[str, ObjectEntry] = {}
        for category, gids in selections:
            name = "" if category is None else category
            digest = hashlib.blake2b(self.salt, digest_size=16)
            digest.update(orjson.dumps(name))
            digest.update(self.etags[gids].tobytes())
            key = digest.hexdigest()
            old = self.previous.get(name)
            if old is not None and old.get("key") == key and name in self.previous_objects:
                index[name], objects[name] = old, self.previous_objects[name]
                continue
            articles = [self._article(int(gid)) for gid in gids.tolist()]
            updated = max((a["updated_at"] for a in articles), default=EPOCH)
            where: dict[str, Any] = {"key": key, "updated": updated}
            blob = bytearray()
            for kind in FEED_FORMATS:
                body = render_feed(kind, self.urls, self.language, category, articles, updated)
                variants = {"identity": body, **precompress(body)}
                ranges: dict[str, Any] = {"etag": fmt.content_digest(body).hex()}
                for encoding in fmt.DOCUMENT_ENCODINGS:
                    ranges[encoding] = [len(blob), len(blob) + len(variants[encoding])]
                    blob += variants[encoding]
                where[kind] = ranges
            index[name] = where
            obj, entry = self.store.put(bytes(blob))
            objects[name], entries[obj] = obj, entry
        updated_all = index[""]["updated"]
        feeds_json = orjson.dumps(
            {"updated": updated_all, "feeds": index}, option=orjson.OPT_SORT_KEYS
        )
        return feeds_json, objects, entries
