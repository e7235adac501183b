"""Compile validated articles into the per-language files of a bundle (app.bundle.format).

All serialisation happens here, once: the server only slices these bytes.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from app.build.records import Article
from app.bundle import format as fmt
from app.search.indexer import IndexDoc, build_index

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def list_order(articles: Iterable[Article]) -> list[Article]:
    """published_at descending, then id ascending (code point order)."""
    return sorted(articles, key=lambda a: (-((a.published - _EPOCH) // _MICROSECOND), a.id))


def article_json(a: Article) -> bytes:
    return orjson.dumps(
        {
            "id": a.id,
            "language": a.language,
            "title": a.title,
            "summary": a.summary,
            "content": a.content,
            "category": a.category,
            "tags": list(a.tags),
            "author": a.author,
            "image_url": a.image_url,
            "published_at": a.published_at,
            "updated_at": a.updated_at,
        }
    )


def summary_json(a: Article) -> bytes:
    return orjson.dumps(
        {
            "id": a.id,
            "language": a.language,
            "title": a.title,
            "summary": a.summary,
            "category": a.category,
            "image_url": a.image_url,
            "published_at": a.published_at,
        }
    )


def _joined(records: list[bytes]) -> tuple[bytes, bytes]:
    """Records joined by commas, and the uint64 offsets array (n+1 entries)."""
    offsets = array(fmt.OFFSET_TYPECODE)
    pos = 0
    for record in records:
        offsets.append(pos)
        pos += len(record) + 1
    offsets.append(pos)  # len(blob) + 1, the last record's virtual comma (0 if no records)
    return b",".join(records), offsets.tobytes()


def compile_language(
    language: str, articles: list[Article]
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """Files of one language (name -> bytes) and its manifest entry."""
    ordered = list_order(articles)
    full = [article_json(a) for a in ordered]
    files: dict[str, bytes] = {}
    files[fmt.ARTICLES_BIN], files[fmt.ARTICLES_OFF] = _joined(full)
    files[fmt.SUMMARIES_BIN], files[fmt.SUMMARIES_OFF] = _joined([summary_json(a) for a in ordered])
    files[fmt.ETAGS_BIN] = b"".join(
        hashlib.blake2b(record, digest_size=fmt.ETAG_BYTES).digest() for record in full
    )

    by_id = sorted(range(len(ordered)), key=lambda i: ordered[i].id.encode("utf-8"))
    id_bytes = [ordered[i].id.encode("utf-8") for i in by_id]
    ids_off = array(fmt.OFFSET_TYPECODE, [0])
    for raw in id_bytes:
        ids_off.append(ids_off[-1] + len(raw))
    files[fmt.IDS_BIN] = b"".join(id_bytes)
    files[fmt.IDS_OFF] = ids_off.tobytes()
    files[fmt.IDS_POS] = array(fmt.POSITION_TYPECODE, by_id).tobytes()

    categories = sorted({a.category for a in ordered})
    category_pos = array(fmt.POSITION_TYPECODE)
    ranges = []
    for name in categories:
        members = [i for i, a in enumerate(ordered) if a.category == name]
        ranges.append([name, len(category_pos), len(members)])
        category_pos.extend(members)
    files[fmt.CATEGORIES_JSON] = orjson.dumps(categories)
    files[fmt.CATEGORY_POS] = category_pos.tobytes()

    search_files = build_index(
        language,
        [IndexDoc(a.title, a.summary, a.content, a.tags) for a in ordered],
    )
    for name, data in search_files.items():
        if not name.startswith(fmt.SEARCH_PREFIX) or "/" in name:
            raise ValueError(f"search index produced a misnamed file {name!r}")
        files[name] = data

    content_hash = hashlib.sha256()
    for name in sorted(files):
        content_hash.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    meta = {
        "articles": len(ordered),
        "categories": ranges,
        "content_hash": content_hash.hexdigest()[:20],
    }
    return files, meta
