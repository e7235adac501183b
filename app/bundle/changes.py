"""The change feed of a language (docs/api.md §13): its log as the builder writes it, the
cursors that point into it, and the pages it answers.

The log is **compacted**: it holds one entry per id, the latest change of that id, so a
page is a slice of it and every entry's kind is the id's state in the bundle it is part of.
Generation files (app/bundle/format.py):

    changes.log        16 bytes per entry, ascending sequence numbers (CHANGE_RECORD):
                       seq (uint32), ref (uint32: the kind in its top 2 bits, then a
                       position), at (int64, microseconds: the publish that recorded it)
    changes.ids / .off the ids of the `removed` entries, sorted bytewise, uint64 offsets
    changes.json       {"lineage", "head", "floor", "publishes": [[last seq, at], ...]}

A ref's position is where the id is in this generation: an `upsert` in the served ids
(ids.bin, sorted bytewise), a `retracted` in the retractions (retractions.json, sorted by
id), a `removed` in changes.ids. `head` is the last sequence number given, `floor` the last
one of the publishes dropped by retention (cursors before it are expired), `publishes` the
publishes kept, for the next build's retention.

A cursor is (lineage, language, position, walk): everything up to `position` has been seen;
`walk` is the head when an initial listing (no `since`) began, and `removed` entries up to it
are left out of that listing (the client never had those ids). It travels as base64url of a
small struct with a check value, so that a mistyped or truncated cursor is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle.errors import BundleError
from app.languages import LANGUAGES
from app.timestamps import format_timestamp

CHANGE_RECORD = np.dtype([("seq", "<u4"), ("ref", "<u4"), ("at", "<i8")])
KINDS = ("upsert", "retracted", "removed")
UPSERT, RETRACTED, REMOVED = range(3)
KIND_SHIFT = 30
REF_MASK = (1 << KIND_SHIFT) - 1
MAX_SEQ = (1 << 32) - 1
LINEAGE_BYTES = 8

# version, lineage, language, position, walk, then the check value of all that
_CURSOR = struct.Struct("<B8sBII")
_CHECK_BYTES = 4
_CURSOR_VERSION = 1
_LANGUAGE_NUMBER = {code: n for n, code in enumerate(LANGUAGES)}


class CursorExpired(Exception):
    """Not a cursor, another lineage or language, or before the oldest change kept."""


@dataclass(frozen=True, slots=True)
class Cursor:
    lineage: bytes
    language: str
    position: int
    walk: int = 0

    def encode(self) -> str:
        raw = _CURSOR.pack(
            _CURSOR_VERSION,
            self.lineage,
            _LANGUAGE_NUMBER[self.language],
            self.position,
            self.walk,
        )
        check = hashlib.blake2b(raw, digest_size=_CHECK_BYTES).digest()
        return base64.urlsafe_b64encode(raw + check).rstrip(b"=").decode("ascii")

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The cursor `text` stands for; CursorExpired if it is none."""
        size = _CURSOR.size + _CHECK_BYTES
        if len(text) != -(-size * 4 // 3) or not text.isascii():
            raise CursorExpired
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (binascii.Error, ValueError):
            raise CursorExpired from None
        body, check = raw[: _CURSOR.size], raw[_CURSOR.size :]
        if len(raw) != size or hashlib.blake2b(body, digest_size=_CHECK_BYTES).digest() != check:
            raise CursorExpired
        version, lineage, language, position, walk = _CURSOR.unpack(body)
        if version != _CURSOR_VERSION or language >= len(LANGUAGES):
            raise CursorExpired
        return cls(lineage, LANGUAGES[language], position, walk)


def lineage_bytes(lineage: str) -> bytes:
    return bytes.fromhex(lineage)


@dataclass(frozen=True, slots=True)
class Page:
    """One answer: (id, kind, at µs, updated_at µs or None) per item, the next cursor, and
    whether asking with it now would return items."""

    items: list[tuple[str, int, int, int | None]]
    next: Cursor
    more: bool


class ChangeLog:
    """One language's change log, mapped; `page` answers a request."""

    def __init__(
        self,
        language: str,
        files: Mapping[str, memoryview],
        served_ids: tuple[memoryview, memoryview, memoryview],
        retracted_ids: list[str],
        updated: list[memoryview],
        where: str,
    ) -> None:
        self.language = language
        try:
            meta = orjson.loads(files[fmt.CHANGES_JSON])
            self.lineage: bytes = lineage_bytes(meta["lineage"])
            self.head: int = int(meta["head"])
            self.floor: int = int(meta["floor"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"{where}/{fmt.CHANGES_JSON}: {exc}") from None
        if len(self.lineage) != LINEAGE_BYTES or not 0 <= self.floor <= self.head <= MAX_SEQ:
            raise BundleError(f"{where}/{fmt.CHANGES_JSON}: bad lineage, head or floor")
        log = files[fmt.CHANGES_LOG]
        if len(log) % CHANGE_RECORD.itemsize:
            raise BundleError(f"{where}/{fmt.CHANGES_LOG}: not whole records")
        self.records = np.frombuffer(log, dtype=CHANGE_RECORD)
        self.seq = self.records["seq"]
        ref = self.records["ref"]
        self.kinds = ref >> KIND_SHIFT
        self.refs = ref & REF_MASK
        blob, off = files[fmt.CHANGES_IDS_BIN], files[fmt.CHANGES_IDS_OFF]
        self._removed_blob = blob
        self._removed_off = np.frombuffer(off, dtype="<u8")
        ids_bin, ids_off, ids_gid = served_ids
        self._ids_blob = ids_bin
        self._ids_off = np.frombuffer(ids_off, dtype="<u8")
        self._ids_gid = np.frombuffer(ids_gid, dtype="<u4")
        self._retracted = retracted_ids
        self._updated_parts = updated
        self._updated: np.ndarray | None = None  # by gid, made at the first page
        n = self.seq.size
        counts = np.bincount(self.kinds, minlength=3) if n else np.zeros(3, dtype=np.int64)
        limits = (self._ids_gid.size, len(retracted_ids), self._removed_off.size - 1)
        if (
            (
                n
                and (
                    np.any(np.diff(self.seq.astype(np.int64)) <= 0) or int(self.seq[-1]) > self.head
                )
            )
            or np.any(self.kinds > REMOVED)
            or tuple(int(c) for c in counts[:3]) != limits
            or any(np.any(self.refs[self.kinds == k] >= limits[k]) for k in range(3) if counts[k])
        ):
            raise BundleError(f"{where}/{fmt.CHANGES_LOG}: does not match the generation")
        # Entries that an initial listing shows (not `removed`), by index.
        self._listed = np.flatnonzero(self.kinds != REMOVED)

    def _updated_by_gid(self) -> np.ndarray:
        if self._updated is None:
            parts = [np.frombuffer(u, dtype="<i8") for u in self._updated_parts]
            self._updated = np.concatenate(parts) if parts else np.zeros(0, dtype="<i8")
        return self._updated

    def start(self) -> Cursor:
        """Where an initial listing starts: nothing seen, the walk beginning at the head."""
        return Cursor(self.lineage, self.language, 0, self.head)

    def page(self, cursor: Cursor, limit: int) -> Page:
        """The changes after `cursor`, at most `limit`; CursorExpired if it cannot be
        answered."""
        if cursor.lineage != self.lineage or cursor.language != self.language:
            raise CursorExpired
        seen = max(cursor.position, cursor.walk)
        if seen > self.head:  # from a newer bundle of the lineage: nothing yet, same cursor
            return Page([], cursor, False)
        if seen < self.floor:
            raise CursorExpired
        seq = self.seq
        start = int(np.searchsorted(seq, cursor.position, side="right"))
        if cursor.walk > cursor.position:
            # Up to the walk's start only what an initial listing shows, then everything.
            end = int(np.searchsorted(seq, cursor.walk, side="right"))
            a = int(np.searchsorted(self._listed, start))
            b = int(np.searchsorted(self._listed, end))
            first = self._listed[a : min(b, a + limit + 1)]
            rest = np.arange(end, min(seq.size, end + limit + 1 - first.size))
            chosen = np.concatenate((first, rest)) if rest.size else first
        else:
            chosen = np.arange(start, min(seq.size, start + limit + 1))
        more = chosen.size > limit
        chosen = chosen[:limit]
        if more:
            last = int(seq[chosen[-1]])
            after = Cursor(
                self.lineage, self.language, last, cursor.walk if cursor.walk > last else 0
            )
        else:
            after = Cursor(self.lineage, self.language, max(cursor.position, self.head), 0)
        return Page(self._items(chosen), after, more)

    def _items(self, chosen: np.ndarray) -> list[tuple[str, int, int, int | None]]:
        kinds = self.kinds[chosen].tolist()
        refs = self.refs[chosen].tolist()
        ats = self.records["at"][chosen].tolist()
        upserts = [r for r, k in zip(refs, kinds, strict=True) if k == UPSERT]
        updated = iter(self._updated_by_gid()[self._ids_gid[upserts]].tolist() if upserts else [])
        off, blob = self._ids_off, self._ids_blob
        roff, rblob = self._removed_off, self._removed_blob
        items: list[tuple[str, int, int, int | None]] = []
        for kind, ref, at in zip(kinds, refs, ats, strict=True):
            if kind == UPSERT:
                name = str(blob[off[ref] : off[ref + 1]], "utf-8", "surrogatepass")
                items.append((name, kind, at, next(updated)))
            elif kind == RETRACTED:
                items.append((self._retracted[ref], kind, at, None))
            else:
                name = str(rblob[roff[ref] : roff[ref + 1]], "utf-8", "surrogatepass")
                items.append((name, kind, at, None))
        return items


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamps(values: list[int]) -> list[str]:
    """RFC 3339 texts of microsecond times, as format_timestamp writes them (fractional
    digits only when there are any): whole seconds formatted by numpy in one call."""
    if not values:
        return []
    us = np.asarray(values, dtype=np.int64)
    seconds, fraction = np.divmod(us, 1_000_000)
    texts = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s").tolist()
    out = [t + "Z" for t in texts]
    for i in np.flatnonzero(fraction).tolist():
        out[i] = format_timestamp(_EPOCH + timedelta(microseconds=values[i]))
    return out


def body(page: Page) -> bytes:
    """The ChangeList body of a page (app.models.ChangeList)."""
    items = page.items
    ats = timestamps(sorted({at for _, _, at, _ in items}))
    at_text = dict(zip(sorted({at for _, _, at, _ in items}), ats, strict=True))
    updated = timestamps([u for _, _, _, u in items if u is not None])
    texts = iter(updated)
    return orjson.dumps(
        {
            "items": [
                {
                    "id": name,
                    "kind": KINDS[kind],
                    "at": at_text[at],
                    "updated_at": None if u is None else next(texts),
                }
                for name, kind, at, u in items
            ],
            "next": page.next.encode(),
            "more": page.more,
        }
    )


def log_meta(lineage: str, head: int, floor: int, publishes: list[list[int]]) -> bytes:
    return orjson.dumps(
        {"lineage": lineage, "head": head, "floor": floor, "publishes": publishes},
        option=orjson.OPT_SORT_KEYS,
    )


def read_meta(data: bytes) -> dict[str, Any]:
    meta: dict[str, Any] = orjson.loads(data)
    return meta
