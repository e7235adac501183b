"""What is fixed per article and sent with it whatever the request: its quoted identity ETag,
its Last-Modified and its Surrogate-Key. The one owner of a segment's `heads.txt`
(app.bundle.format.HEADS): the builder writes it (`encode`), the server reads it (`Heads`).

Each article has one ASCII record of one width per language, the three values side by side,
so a server loads a segment's values with one decode and a request slices them; nothing is
computed per article when a bundle loads (docs/delivery.md, "Last-Modified").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.bundle import format as fmt
from app.bundle.errors import BundleError
from app.surrogate_keys import article_key_width, article_keys

ETAG_CHARS = 2 * fmt.ETAG_BYTES + 2  # '"' + hex digest + '"'
HTTP_DATE_CHARS = 29  # "Thu, 01 Jan 1970 00:00:00 GMT"


def width(language: str) -> int:
    """Characters of one article's record in `language`."""
    return ETAG_CHARS + HTTP_DATE_CHARS + article_key_width(language)


def encode(language: str, etags: bytes, updated: np.ndarray, ids: Sequence[bytes]) -> bytes:
    """The records of a segment's articles, in its order: `etags` (fmt.ETAG_BYTES each, as
    etags.bin), `updated` (Unix microseconds, as updated.i64) and `ids` (UTF-8)."""
    n = len(ids)
    if len(etags) != n * fmt.ETAG_BYTES or updated.size != n:
        raise ValueError("etags, updated times and ids differ in length")
    out = np.empty((n, width(language)), dtype=np.uint8)
    out[:, 0] = out[:, ETAG_CHARS - 1] = ord('"')
    hexed = np.frombuffer(etags.hex().encode("ascii"), dtype=np.uint8)
    out[:, 1 : ETAG_CHARS - 1] = hexed.reshape(n, 2 * fmt.ETAG_BYTES)
    out[:, ETAG_CHARS : ETAG_CHARS + HTTP_DATE_CHARS] = http_dates(updated)
    keys = article_keys(language, ids).encode("ascii")
    out[:, ETAG_CHARS + HTTP_DATE_CHARS :] = np.frombuffer(keys, dtype=np.uint8).reshape(n, -1)
    return out.tobytes()


class Heads:
    """A segment's records, decoded once when a server maps the segment; one object per
    segment, shared by the generations that keep it (app.bundle.language)."""

    __slots__ = ("__weakref__", "text", "width")

    def __init__(self, view: memoryview, language: str, docs: int, where: str) -> None:
        self.width = width(language)
        if len(view) != docs * self.width:
            raise BundleError(f"{where}/{fmt.HEADS}: size does not match")
        try:
            self.text = str(view, "ascii")
        except UnicodeDecodeError:
            raise BundleError(f"{where}/{fmt.HEADS}: not ASCII") from None

    def of(self, local: int) -> tuple[str, str, str]:
        """(ETag, Last-Modified, Surrogate-Key) of document `local`."""
        start = local * self.width
        date = start + ETAG_CHARS
        key = date + HTTP_DATE_CHARS
        text = self.text
        return text[start:date], text[date:key], text[key : start + self.width]


_WEEKDAYS = np.frombuffer(b"MonTueWedThuFriSatSun", dtype=np.uint8).reshape(7, 3)
_MONTHS = np.frombuffer(b"JanFebMarAprMayJunJulAugSepOctNovDec", dtype=np.uint8).reshape(12, 3)


def http_dates(micros: np.ndarray) -> np.ndarray:
    """The HTTP-date (RFC 9110, 5.6.7) of every time of `micros` (Unix microseconds), to the
    second: one row of HTTP_DATE_CHARS ASCII bytes each (app.bundle.segment.http_date's
    format, for a whole segment at once)."""
    seconds = micros.astype(np.int64) // 1_000_000
    days = seconds // 86_400
    clock = seconds - days * 86_400
    day = days.astype("datetime64[D]")
    month = day.astype("datetime64[M]")
    year = month.astype("datetime64[Y]").astype(np.int64) + 1970
    out = np.empty((seconds.size, HTTP_DATE_CHARS), dtype=np.uint8)
    out[:] = np.frombuffer(b"Www, 00 Mmm 0000 00:00:00 GMT", dtype=np.uint8)
    out[:, 0:3] = _WEEKDAYS[(days + 3) % 7]  # 1970-01-01 was a Thursday
    out[:, 8:11] = _MONTHS[month.astype(np.int64) % 12]
    for column, value, digits in (
        (5, (day - month).astype(np.int64) + 1, 2),
        (12, year, 4),
        (17, clock // 3600, 2),
        (20, clock // 60 % 60, 2),
        (23, clock % 60, 2),
    ):
        for i in range(digits):
            out[:, column + i] = 48 + value // 10 ** (digits - 1 - i) % 10
    return out
