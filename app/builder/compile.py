"""Compile validated articles into the per-language files of a bundle (app.bundle.format).

All serialisation happens here, once: the server only slices these bytes.
"""

from __future__ import annotations

from array import array
from datetime import UTC, datetime, timedelta

import numpy as np
import orjson

from app import compression, models
from app.builder.records import Article, to_wire
from app.bundle import format as fmt
from app.bundle import heads
from app.public_urls import PublicUrls
from app.search.indexer import IndexDoc, build_index
from app.syndication import sitemap_url
from app.timestamps import format_timestamp

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def article_json(a: Article) -> bytes:
    return to_wire(a).model_dump_json().encode()


def summary_json(a: Article) -> bytes:
    wire = to_wire(a)
    fields = {name: getattr(wire, name, None) for name in models.ArticleSummary.model_fields}
    fields["ai_generated"] = a.provenance.ai_generated
    return models.ArticleSummary.model_construct(**fields).model_dump_json().encode()


def corrections_json(articles: list[Article]) -> bytes:
    """The segment's corrections (fmt.SEG_CORRECTIONS), for the corrections log: only the
    articles that have any, by their number in the segment."""
    return orjson.dumps(
        [
            [
                n,
                a.title,
                [[epoch_micros(c.at), format_timestamp(c.at), c.text] for c in a.corrections],
            ]
            for n, a in enumerate(articles)
            if a.corrections
        ]
    )


def joined(records: list[bytes], separator: bytes = b",") -> tuple[bytes, bytes]:
    """Records joined by `separator`, and the uint64 offsets array (n+1 entries): record i
    is blob[off[i] : off[i + 1] - len(separator)]."""
    offsets = array(fmt.OFFSET_TYPECODE)
    pos = 0
    for record in records:
        offsets.append(pos)
        pos += len(record) + len(separator)
    # len(blob) + len(separator), the last record's virtual separator (0 if no records)
    offsets.append(pos)
    return separator.join(records), offsets.tobytes()


_COMPRESS = {
    compression.GZIP: compression.gzip_piece,
    compression.ZSTD: compression.zstd_piece,
    compression.BR: compression.precompress_br,
}


def compressed_pieces(kind: str, records: list[bytes]) -> dict[str, bytes]:
    """The compressed piece files of one kind of record (fmt.PIECES), for compile_segment."""
    files: dict[str, bytes] = {}
    seps = compression.separators(fmt.RECORDS[kind][2])
    for (k, encoding), (name_bin, name_off) in fmt.PIECES.items():
        if k != kind:
            continue
        pieces = [_COMPRESS[encoding](record) for record in records]
        files[name_bin], files[name_off] = joined(pieces, seps[encoding])
    return files


def epoch_micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND


def packed(strings: list[bytes]) -> tuple[bytes, bytes]:
    """Strings end to end, and the uint64 offsets array (n+1 entries)."""
    off = array(fmt.OFFSET_TYPECODE, [0])
    for raw in strings:
        off.append(off[-1] + len(raw))
    return b"".join(strings), off.tobytes()


def index_doc(a: Article) -> IndexDoc:
    """The fields of an article that its language's search index holds."""
    return IndexDoc(a.title, a.summary, a.content, a.tags)


def compile_segment(
    language: str,
    articles: list[Article],
    line_hashes: list[bytes],
    urls: PublicUrls,
    pair_list: tuple[str, ...],
) -> dict[str, bytes]:
    """The files of one segment (app.bundle.format): `articles` with the hash of each one's
    source line, any order in, list order out; `pair_list`, the language's pair words
    (app/search/pair_words.py). Deterministic: same input, same bytes."""
    order = sorted(
        range(len(articles)), key=lambda i: (-epoch_micros(articles[i].published), articles[i].id)
    )
    ordered = [articles[i] for i in order]
    full = [article_json(a) for a in ordered]
    files: dict[str, bytes] = {}
    files[fmt.ARTICLES_BIN], files[fmt.ARTICLES_OFF] = joined(full)
    summaries = [summary_json(a) for a in ordered]
    files[fmt.SUMMARIES_BIN], files[fmt.SUMMARIES_OFF] = joined(summaries)
    files.update(compressed_pieces("articles", full))
    files.update(compressed_pieces("summaries", summaries))
    files[fmt.ETAGS_BIN] = b"".join(fmt.content_digest(record) for record in full)
    files[fmt.SEG_IDS_BIN], files[fmt.SEG_IDS_OFF] = packed([a.id.encode() for a in ordered])
    files[fmt.STORIES_BIN], files[fmt.STORIES_OFF] = packed(
        [(a.story_id or "").encode() for a in ordered]
    )
    sitemap = [sitemap_url(urls, language, orjson.loads(record)) for record in full]
    files[fmt.SITEMAP_BIN], files[fmt.SITEMAP_OFF] = joined(sitemap, fmt.RECORDS["sitemap"][2])
    files.update(compressed_pieces("sitemap", sitemap))
    files[fmt.PUBLISHED] = array("q", [epoch_micros(a.published) for a in ordered]).tobytes()
    # Microseconds, as the Article's `updated_at` says it (the change feed answers it
    # without reading the record); Last-Modified takes the whole seconds.
    updated = array("q", [epoch_micros(a.updated) for a in ordered])
    files[fmt.UPDATED] = updated.tobytes()
    files[fmt.HEADS] = heads.encode(
        language,
        files[fmt.ETAGS_BIN],
        np.frombuffer(updated, dtype=np.int64),
        [a.id.encode() for a in ordered],
    )
    names = sorted({a.category for a in ordered})
    number = {name: i for i, name in enumerate(names)}
    files[fmt.SEG_CATEGORIES] = orjson.dumps(names)
    files[fmt.CATEGORY_OF] = array("I", [number[a.category] for a in ordered]).tobytes()
    files[fmt.LINES] = b"".join(line_hashes[i] for i in order)
    files[fmt.SEG_CORRECTIONS] = corrections_json(ordered)
    search_files = build_index(language, [index_doc(a) for a in ordered], pair_list)
    for name, data in search_files.items():
        if not name.startswith(fmt.SEARCH_PREFIX) or "/" in name:
            raise ValueError(f"search index produced a misnamed file {name!r}")
        files[name] = data
    return files
