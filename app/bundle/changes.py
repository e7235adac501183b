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
import operator
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import orjson

from app import versions
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
            versions.CHANGES_CURSOR_VERSION,
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
        if version != versions.CHANGES_CURSOR_VERSION or language >= len(LANGUAGES):
            raise CursorExpired
        return cls(lineage, LANGUAGES[language], position, walk)


def lineage_bytes(lineage: str) -> bytes:
    return bytes.fromhex(lineage)


@dataclass(frozen=True, slots=True)
class Page:
    """One answer: the log entries it holds (indexes, in order), the next cursor, and whether
    asking with it now would return items."""

    log: ChangeLog
    entries: np.ndarray
    next: Cursor
    more: bool

    def items(self) -> list[tuple[str, int, int, int | None]]:
        """(id, kind, at µs, updated_at µs or None) of each entry."""
        return self.log.items(self.entries)

    def body(self) -> bytes:
        """The ChangeList body (app.models.ChangeList)."""
        return self.log.render(self.entries, self.next, self.more)


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
        self._removed_array = np.frombuffer(blob, dtype=np.uint8)
        self._removed_off = np.frombuffer(off, dtype="<u8")
        ids_bin, ids_off, ids_gid = served_ids
        self._ids_blob = ids_bin
        self._ids_array = np.frombuffer(ids_bin, dtype=np.uint8)
        self._ids_off = np.frombuffer(ids_off, dtype="<u8")
        self._ids_gid = np.frombuffer(ids_gid, dtype="<u4")
        self._retracted = retracted_ids
        self._updated_parts = updated
        self._updated: np.ndarray | None = None  # by gid, made at the first page
        self._updated_rows: np.ndarray | None = None  # its texts (n, 19), likewise
        self._at_rows: dict[int, np.ndarray] = {}  # a publish's time as text
        self._name_list: list[bytes] | None = None  # every id it can name, made when asked
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
        # Where each kind's positions start in _names().
        self._bases = np.asarray([0, limits[0], limits[0] + limits[1]], dtype=np.int64)
        # Entries that an initial listing shows (not `removed`), by index.
        self._listed = np.flatnonzero(self.kinds != REMOVED)
        self._plain: bool | None = None  # no id needs escaping in JSON (made when asked)

    def _ids_plain(self) -> bool:
        """Whether every id this log can name goes into JSON as it is: ids hold no control
        character (the builder refuses them), so only a quote or a backslash would not."""
        if self._plain is None:
            self._plain = not any(
                np.any((blob == 0x22) | (blob == 0x5C))
                for blob in (
                    np.frombuffer(self._ids_blob, dtype=np.uint8),
                    np.frombuffer(self._removed_blob, dtype=np.uint8),
                )
            ) and not any('"' in i or "\\" in i for i in self._retracted)
        return self._plain

    def render(self, chosen: np.ndarray, after: Cursor, more: bool) -> bytes:
        """The ChangeList body of the entries `chosen`. Items are `{"id", "at",
        "updated_at", "kind"}`; the common case (ids that need no escaping, whole-second
        times of years 1000 to 9999) is composed without a Python object per field: each
        item's fixed-width part is a row of one numpy array (its times filled in by column),
        and the body joins those rows with the ids' bytes."""
        tail = b'],"next":"%s","more":%s}' % (
            after.encode().encode(),
            b"true" if more else b"false",
        )
        n = int(chosen.size)
        if not n:
            return b'{"items":[' + tail
        kinds = self.kinds[chosen]
        refs = self.refs[chosen]
        at = self.records["at"][chosen]
        up = kinds == UPSERT
        gids = self._ids_gid[refs[up]]
        times = np.concatenate((at, self._updated_by_gid()[gids]))
        if (
            not self._ids_plain()
            or np.any(times % 1_000_000)
            or np.any(times < _FIRST_US)
            or np.any(times > _LAST_US)
        ):
            return _slow_body(self.items(chosen), tail)
        rows = _TEMPLATE_ROWS[kinds]
        rows[:, _AT : _AT + 19] = self._at_texts(at)
        if gids.size == n:
            rows[:, _UPDATED : _UPDATED + 19] = self._updated_texts()[gids]
        elif gids.size:
            rows[up, _UPDATED : _UPDATED + 19] = self._updated_texts()[gids]
        glue = rows.view(f"S{_ROW}").ravel().tolist()  # trailing NULs dropped
        glue[-1] = glue[-1][: -len(_NEXT_ITEM)] + tail
        ids: list[bytes]
        ids = self._id_bytes(refs, kinds)
        parts: list[bytes | memoryview] = [b""] * (2 * n + 1)
        parts[0] = b'{"items":[{"id":"'
        parts[1::2] = ids
        parts[2::2] = glue
        return b"".join(parts)

    def _updated_by_gid(self) -> np.ndarray:
        if self._updated is None:
            parts = [np.frombuffer(u, dtype="<i8") for u in self._updated_parts]
            self._updated = np.concatenate(parts) if parts else np.zeros(0, dtype="<i8")
        return self._updated

    def _updated_texts(self) -> np.ndarray:
        """Every gid's updated_at to the second as `YYYY-MM-DDTHH:MM:SS`: 19 bytes a served
        article, made once per bundle and worker when the feed is first asked for, so that a
        page gathers its texts in one step. Times out of range are clipped here; pages that
        hold one are written item by item."""
        if self._updated_rows is None:
            updated = np.clip(self._updated_by_gid(), _FIRST_US, _LAST_US)
            self._updated_rows = _second_texts(updated)
        return self._updated_rows

    def _id_bytes(self, refs: np.ndarray, kinds: np.ndarray) -> list[bytes]:
        """The ids of a page's entries, picked in one call from every id the log can name."""
        names = self._names()
        where = refs.astype(np.int64) + self._bases[kinds]
        picked = operator.itemgetter(*where.tolist())(names)
        return [picked] if refs.size == 1 else list(picked)

    def _names(self) -> list[bytes]:
        """Every id the log can name, as bytes: the served ones (ids.bin order), then the
        retracted (retractions.json order), then the removed (changes.ids order). Made once
        per bundle and worker when the feed is first asked for (about 50 bytes of memory an
        id), so that a page picks its ids in one call."""
        if self._name_list is None:
            names = _all_ids(self._ids_array, self._ids_off)
            names += [i.encode("utf-8", "surrogatepass") for i in self._retracted]
            names += _all_ids(self._removed_array, self._removed_off)
            self._name_list = names
        return self._name_list

    def _at_texts(self, at: np.ndarray) -> np.ndarray:
        # A page spans few publishes, in order: its times ascend.
        cuts = np.flatnonzero(at[1:] != at[:-1]) + 1
        distinct = at[np.concatenate(([0], cuts))] if cuts.size else at[:1]
        which = np.searchsorted(distinct, at) if cuts.size else np.zeros(at.size, np.intp)
        texts = []
        for value in distinct.tolist():
            text = self._at_rows.get(value)
            if text is None:
                text = self._at_rows[value] = _second_texts(np.asarray([value]))[0]
            texts.append(text)
        return np.stack(texts)[which]

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
            return Page(self, _NONE, cursor, False)
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
        return Page(self, chosen, after, more)

    def items(self, chosen: np.ndarray) -> list[tuple[str, int, int, int | None]]:
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
_NONE = np.zeros(0, dtype=np.int64)
# Whole seconds that numpy writes as YYYY-MM-DDTHH:MM:SS (years 1000 to 9999), in µs.
_FIRST_US = -30_610_224_000 * 1_000_000
_LAST_US = 253_402_300_799 * 1_000_000
# Each item after its id: the fixed-width part, then the start of the next item.
_NEXT_ITEM = b',{"id":"'
_TIME = b"0000-00-00T00:00:00"
_TEMPLATES = {
    UPSERT: b'","at":"%bZ","updated_at":"%bZ","kind":"upsert"}%b' % (_TIME, _TIME, _NEXT_ITEM),
    RETRACTED: b'","at":"%bZ","updated_at":null,"kind":"retracted"}%b' % (_TIME, _NEXT_ITEM),
    REMOVED: b'","at":"%bZ","updated_at":null,"kind":"removed"}%b' % (_TIME, _NEXT_ITEM),
}
_ROW = max(len(t) for t in _TEMPLATES.values())
# One row per kind, NUL-padded to the widest: rows of a page are a gather by kind.
_TEMPLATE_ROWS = np.frombuffer(
    b"".join(_TEMPLATES[k].ljust(_ROW, b"\0") for k in range(3)), dtype=np.uint8
).reshape(3, _ROW)
_AT = len(b'","at":"')
_UPDATED = _AT + 19 + len(b'Z","updated_at":"')


_TWO_DIGITS = np.frombuffer(b"".join(b"%02d" % i for i in range(100)), dtype=np.uint8).reshape(
    100, 2
)
_CLOCK: list[np.ndarray] = []  # "HH:MM:SS" of every second of a day, made when first needed


def _clock() -> np.ndarray:
    if not _CLOCK:
        hour, rest = np.divmod(np.arange(86_400), 3_600)
        minute, second = np.divmod(rest, 60)
        clock = np.full((86_400, 8), ord(":"), dtype=np.uint8)
        for column, field in ((0, hour), (3, minute), (6, second)):
            clock[:, column : column + 2] = _TWO_DIGITS[field]
        _CLOCK.append(clock)
    return _CLOCK[0]


def _second_texts(us: np.ndarray) -> np.ndarray:
    """(n, 19) ASCII `YYYY-MM-DDTHH:MM:SS` of whole-second microsecond times (years 1000 to
    9999), by table lookups and arithmetic on the arrays: the time of day from a table of
    the day's seconds, the date computed once per distinct day (the civil calendar from
    days since the epoch, H. Hinnant's algorithm). numpy's datetime_as_string costs ten
    times more."""
    days, second_of_day = np.divmod(us // 1_000_000, 86_400)
    distinct, which = np.unique(days, return_inverse=True)
    z = distinct + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = yoe + era * 400 + (month <= 2)
    dates = np.full((distinct.size, 10), ord("-"), dtype=np.uint8)
    for column, field in ((0, year // 100), (2, year % 100), (5, month), (8, day)):
        dates[:, column : column + 2] = _TWO_DIGITS[field]
    out = np.empty((us.size, 19), dtype=np.uint8)
    out[:, :10] = dates[which]
    out[:, 10] = ord("T")
    out[:, 11:] = _clock()[second_of_day]
    return out


def _all_ids(blob: np.ndarray, off: np.ndarray) -> list[bytes]:
    """Every id of a blob and its uint64 offsets, as bytes, 4,096 at a time (so that one long
    id widens only its own batch)."""
    offsets = off.astype(np.int64)
    names: list[bytes] = []
    for start in range(0, max(offsets.size - 1, 0), 4096):
        stop = min(start + 4096, offsets.size - 1)
        names += _ids_bytes(blob, offsets[start:stop], offsets[start + 1 : stop + 1])
    return names


def _ids_bytes(blob: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[bytes]:
    """The ids blob[starts[i]:ends[i]] as bytes, gathered into one fixed-width array (an id
    never ends with NUL: it holds no control character) and listed in one call."""
    lengths = ends - starts
    if not lengths.size or not blob.size:
        return [b""] * lengths.size
    width = max(int(lengths.max()), 1)
    columns = np.arange(width)
    gathered = np.take(blob, starts[:, None] + columns[None, :], mode="clip")
    gathered *= columns[None, :] < lengths[:, None]
    names: list[bytes] = gathered.view(f"S{width}").ravel().tolist()
    return names


def _slow_body(items: list[tuple[str, int, int, int | None]], tail: bytes) -> bytes:
    """The same body, item by item (an id to escape, a fractional second, a far year)."""
    ats = timestamps([at for _, _, at, _ in items])
    updated = iter(timestamps([u for _, _, _, u in items if u is not None]))
    body = orjson.dumps(
        [
            {
                "id": name,
                "at": at,
                "updated_at": None if u is None else next(updated),
                "kind": KINDS[kind],
            }
            for (name, kind, _, u), at in zip(items, ats, strict=True)
        ]
    )
    return b'{"items":' + body[:-1] + tail


def timestamps(values: list[int]) -> list[str]:
    """RFC 3339 texts of microsecond times, by the formatter of every body
    (app.timestamps.format_timestamp: fractional digits only when there are any)."""
    return [format_timestamp(_EPOCH + timedelta(microseconds=v)) for v in values]


def log_meta(lineage: str, head: int, floor: int, publishes: list[list[int]]) -> bytes:
    return orjson.dumps(
        {"lineage": lineage, "head": head, "floor": floor, "publishes": publishes},
        option=orjson.OPT_SORT_KEYS,
    )
