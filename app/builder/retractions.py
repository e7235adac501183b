"""Retracted articles and the public corrections log (docs/api.md §11).

A retracted article is not compiled into a segment: it is served nowhere but its own URL,
as a 410 with its notice. The builder keeps each language's retractions in the generation
(fmt.RETRACTIONS_JSON), with the hash of the source line each came from, so that the next
build recognises an unchanged retraction line without parsing it, exactly as it recognises
an unchanged article.

The corrections log of a language is rebuilt by every publish from the segments' small
corrections files (only the articles that have corrections) and the retractions: entries
`at` descending, then article id, then kind, pre-serialised and compressed as pieces, so
a page of it is slices like a page of articles.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from app import compression
from app.builder.compile import epoch_micros, joined
from app.builder.records import Article
from app.bundle import format as fmt
from app.bundle.manifest import Language
from app.bundle.objects import ObjectStore
from app.bundle.segment import SegmentReader
from app.timestamps import format_timestamp

# (at microseconds, at, text) of one correction
Note = tuple[int, str, str]


@dataclass(frozen=True, slots=True)
class RetractedArticle:
    """What a retraction keeps of its article: the notice, and the corrections that stay in
    the log beside it."""

    language: str
    id: str
    title: str
    at_us: int
    at: str
    reason: str
    corrections: tuple[Note, ...]
    hash: bytes  # of the source line

    @classmethod
    def of(cls, article: Article, line_hash: bytes) -> RetractedArticle:
        retracted = article.retracted
        if retracted is None:
            raise ValueError(f"{article.source}: not a retraction")
        return cls(
            article.language,
            article.id,
            article.title,
            epoch_micros(retracted.at),
            format_timestamp(retracted.at),
            retracted.reason,
            tuple(
                (epoch_micros(c.at), format_timestamp(c.at), c.text) for c in article.corrections
            ),
            line_hash,
        )

    def record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "at_us": self.at_us,
            "at": self.at,
            "reason": self.reason,
            "corrections": [list(c) for c in self.corrections],
            "line": self.hash.hex(),
        }

    @classmethod
    def from_record(cls, language: str, record: Mapping[str, Any]) -> RetractedArticle:
        return cls(
            language,
            record["id"],
            record["title"],
            int(record["at_us"]),
            record["at"],
            record["reason"],
            tuple((int(us), at, text) for us, at, text in record["corrections"]),
            bytes.fromhex(record["line"]),
        )

    def notice(self) -> bytes:
        """The 410 body (app.models.RetractedArticle)."""
        return orjson.dumps(
            {
                "detail": "Article retracted",
                "id": self.id,
                "title": self.title,
                "retracted_at": self.at,
                "reason": self.reason,
            }
        )


def load(store: ObjectStore, meta: Language, language: str) -> list[RetractedArticle]:
    """A served language's retractions."""
    raw = orjson.loads(store.path(meta.files[fmt.RETRACTIONS_JSON]).read_bytes())
    return [RetractedArticle.from_record(language, r) for r in raw]


def _previous_notices(store: ObjectStore, previous: Language | None) -> dict[str, dict[str, bytes]]:
    """etag -> the notice in every coding, from the bundle being updated: a kept notice is
    not compressed again."""
    if previous is None:
        return {}
    records = orjson.loads(store.path(previous.files[fmt.RETRACTIONS_JSON]).read_bytes())
    blob = store.path(previous.files[fmt.NOTICES_BIN]).read_bytes()
    return {
        r["notice"]["etag"]: {e: blob[a:b] for e, (a, b) in r["notice"]["ranges"].items()}
        for r in records
    }


def build_files(
    store: ObjectStore,
    language: str,
    retractions: list[RetractedArticle],
    readers: list[SegmentReader],
    live: list[np.ndarray],
    previous: Language | None,
) -> tuple[list[tuple[str, bytes]], bytes]:
    """The generation files of retractions and the corrections log, and the bytes they serve
    (for the content hash). `live` is each segment's live documents (bool per document)."""
    known = _previous_notices(store, previous)
    records, blob = [], bytearray()
    served = hashlib.blake2b(digest_size=16)
    for r in sorted(retractions, key=lambda r: r.id):
        body = r.notice()
        etag = fmt.content_digest(body).hex()
        variants = known.get(etag) or {"identity": body, **compression.precompress(body)}
        ranges = {}
        for encoding in fmt.DOCUMENT_ENCODINGS:
            ranges[encoding] = [len(blob), len(blob) + len(variants[encoding])]
            blob += variants[encoding]
        records.append({**r.record(), "notice": {"etag": etag, "ranges": ranges}})
        served.update(bytes.fromhex(etag))

    # (-at, article id, kind, text, title) of every entry
    entries: list[tuple[int, str, str, str, str, str]] = []
    for reader, alive in zip(readers, live, strict=True):
        for doc, title, notes in reader.corrections():
            if alive[doc]:
                i = reader.id_at(doc).decode()
                entries += [(-us, i, "correction", text, at, title) for us, at, text in notes]
    for r in retractions:
        entries += [(-us, r.id, "correction", text, at, r.title) for us, at, text in r.corrections]
        entries.append((-r.at_us, r.id, "retraction", r.reason, r.at, r.title))
    entries.sort()
    log = [
        orjson.dumps({"article_id": i, "title": title, "kind": kind, "at": at, "text": text})
        for _, i, kind, text, at, title in entries
    ]
    files: list[tuple[str, bytes]] = [
        (fmt.RETRACTIONS_JSON, orjson.dumps(records)),
        (fmt.NOTICES_BIN, bytes(blob)),
    ]
    seps = compression.separators(fmt.LOG_SEPARATOR)
    pieces = {
        "identity": log,
        "gzip": [compression.gzip_piece(r) for r in log],
        "zstd": [compression.zstd_piece(r) for r in log],
    }
    for encoding, (name_bin, name_off) in fmt.LOG_FILES.items():
        data, offsets = joined(pieces[encoding], seps[encoding])
        files += [(name_bin, data), (name_off, offsets)]
    served.update(b",".join(log))
    return files, served.digest()
