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
from app.compression import CODEC_ID, precompress
from app.search import layout
from app.search.analyzers import ANALYZER_VERSION


def build_generation(
    store: ObjectStore,
    language: str,
    segments: list[dict[str, Any]],
    deleted: list[np.ndarray],
) -> tuple[dict[str, Any], dict[str, ObjectEntry]]:
    """The manifest entry of one language and the entries of its new generation objects."""
    rows: list[tuple[int, bytes, int]] = []  # (-published, id, gid) of every live document
    categories: list[str] = []  # by gid
    etags: list[memoryview] = []
    base = 0
    for desc, dead in zip(segments, deleted, strict=True):
        reader = SegmentReader(store, desc)
        published = reader.array(fmt.PUBLISHED, "<i8").tolist()
        ids = reader.ids()
        live = np.ones(reader.docs, dtype=bool)
        live[dead] = False
        rows.extend((-published[i], ids[i], base + i) for i in np.flatnonzero(live).tolist())
        categories.extend(reader.categories())
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
    published_pos = -np.asarray([p for p, _, _ in rows], dtype="<i8")
    # Oldest first: published asc, then list position asc (= id asc among equal times).
    oldest = np.lexsort((np.arange(order.size), published_pos)).astype("<u4")
    grouped_oldest = oldest[np.argsort(category_of_position[oldest], kind="stable")]
    counts = np.bincount(category_of_position, minlength=len(names)).tolist()
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).tolist() if names else []

    all_etags = np.frombuffer(b"".join(etags), dtype=np.dtype((np.void, fmt.ETAG_BYTES)))
    content = hashlib.sha256(
        f"{fmt.CONTENT_VERSION}\0{layout.FORMAT_VERSION}\0{ANALYZER_VERSION}\0{language}\0".encode()
    )
    content.update(all_etags[order].tobytes())

    files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}
    categories_json = orjson.dumps(names)
    encoded = precompress(categories_json)
    for name, data in (
        (fmt.ORDER, order.tobytes()),
        (fmt.IDS_BIN, b"".join(i for i, _ in by_id)),
        (fmt.IDS_OFF, ids_off.astype("<u8").tobytes()),
        (fmt.IDS_GID, np.asarray([g for _, g in by_id], dtype="<u4").tobytes()),
        (fmt.CATEGORY_POS, grouped.tobytes()),
        (fmt.CATEGORIES_JSON, categories_json),
        *((fmt.CATEGORIES_ENCODED[e], encoded[e]) for e in sorted(fmt.CATEGORIES_ENCODED)),
        (fmt.PUBLISHED_POS, published_pos.tobytes()),
        (fmt.OLDEST_POS, oldest.tobytes()),
        (fmt.CATEGORY_OF_POS, category_of_position.astype("<u4").tobytes()),
        (fmt.CATEGORY_OLDEST, grouped_oldest.astype("<u4").tobytes()),
    ):
        obj, entry = store.put(data)
        files[name] = obj
        entries[obj] = entry
    meta = {
        "articles": len(rows),
        "content_hash": content.hexdigest()[:20],
        "codec": CODEC_ID,
        "categories": [[n, s, c] for n, s, c in zip(names, starts, counts, strict=True)],
        "segments": segments,
        "deleted": [int(d.size) for d in deleted],
        "files": files,
    }
    return meta, entries
