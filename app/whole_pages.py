"""Whole-page compression of composed pages: lists, latest, search and sitemap pages
(docs/delivery.md, "Whole pages").

Pieces compressed one record at a time lose the context between records: on hand-written
text a list page composed from pieces comes to 0.56-0.60 of identity, where the whole page
compressed gives 0.40-0.44. So a page the process has already been asked for is compressed
whole, in the coding the client gets, and kept in a bounded LRU per bundle. A page asked for
the first time goes out composed from pieces (gzip, zstd: no compression at request time),
so a long tail of distinct searches costs what it always did. br has no pieces: a br answer
is always a whole page.

Levels: each within 1.15 x of the reference whole-page compressors (gzip -6, zstd -3,
br 5) on hand-written text, in less of their time (docs/delivery.md has the figures). The
gzip trailer's CRC-32 is ISA-L's, as for composed pages.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable

import brotli
import zstandard
from isal import isal_zlib

from app.compression import (
    BR,
    BROTLI_QUALITY,
    CODEC_ID,
    GZIP,
    GZIP_HEADER,
    GZIP_LEVEL,
    ZSTD,
    ZSTD_LEVEL,
)

# Part of a whole page's ETag (`-zstd.w<id>`): what determines its bytes. Whole pages are
# compressed at the pieces' levels (app.compression), so the id is theirs.
WHOLE_CODEC_ID = CODEC_ID

_local = threading.local()


def compress(encoding: str, body: bytes) -> bytes:
    """`body` compressed whole in `encoding`. Deterministic: same body, same bytes (the gzip
    header carries no time or name)."""
    if encoding == ZSTD:
        cctx = getattr(_local, "zstd", None)
        if cctx is None:
            cctx = _local.zstd = zstandard.ZstdCompressor(
                level=ZSTD_LEVEL, write_checksum=False, write_content_size=True
            )
        return bytes(cctx.compress(body))
    if encoding == GZIP:
        c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -15, 9)
        deflate = c.compress(body) + c.flush()
        trailer = struct.pack("<II", isal_zlib.crc32(body), len(body) & 0xFFFFFFFF)
        # flush() ends the stream with its final block (composed bodies add DEFLATE_END).
        return b"".join([GZIP_HEADER, deflate, trailer])
    if encoding == BR:
        return brotli.compress(body, quality=BROTLI_QUALITY)
    raise ValueError(f"no whole-page {encoding}")


class WholePages:
    """Per process: whole compressed pages by (identity ETag, coding), at most `max_bytes`
    in all, least recently used first out; and the ETags of pages asked for once (at most
    `max_seen`), which decide when a page is worth compressing whole. Both are emptied when
    the bundle changes. Thread-safe (gthread workers)."""

    def __init__(self, max_bytes: int = 32 << 20, max_seen: int = 65536) -> None:
        self.max_bytes = max_bytes
        self.max_seen = max_seen
        self._bundle: str | None = None
        self._pages: OrderedDict[tuple[str, str], bytes] = OrderedDict()
        self._size = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self.compressed = 0  # pages compressed by this process (tests, metrics)

    def _switch(self, bundle_id: str) -> None:
        if bundle_id != self._bundle:
            self._bundle = bundle_id
            self._pages.clear()
            self._seen.clear()
            self._size = 0

    def repeated(self, bundle_id: str, etag: str) -> bool:
        """True from the second time a page (its identity ETag) is asked for in this bundle."""
        with self._lock:
            self._switch(bundle_id)
            if etag in self._seen:
                return True
            if len(self._seen) >= self.max_seen:
                self._seen.clear()  # a flood of distinct pages: start counting again
            self._seen.add(etag)
            return False

    def get(self, bundle_id: str, etag: str, encoding: str, identity: Callable[[], bytes]) -> bytes:
        """The page compressed whole in `encoding`: from the cache, or compressed now (from
        `identity()`, called only then) and kept when it fits (a page over a quarter of the
        budget is never kept)."""
        key = (etag, encoding)
        with self._lock:
            self._switch(bundle_id)
            body = self._pages.get(key)
            if body is not None:
                self._pages.move_to_end(key)
                return body
        body = compress(encoding, identity())  # outside the lock: other threads go on
        with self._lock:
            self.compressed += 1
            if self._bundle != bundle_id or len(body) > self.max_bytes // 4:
                return body
            if key not in self._pages:
                self._pages[key] = body
                self._size += len(body)
                while self._size > self.max_bytes:
                    _, old = self._pages.popitem(last=False)
                    self._size -= len(old)
        return body

    @property
    def size(self) -> int:
        return self._size
