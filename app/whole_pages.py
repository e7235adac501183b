"""Whole-page compression of composed pages: lists, latest, search, the corrections log and
sitemap pages (docs/delivery.md, "Whole pages").

Pieces compressed one record at a time lose the context between records: on hand-written
text a list page composed from pieces comes to 0.56-0.60 of identity, where the whole page
compressed gives 0.40-0.44. So a page goes out compressed whole in every coding but
identity, on its first request as on every later one: one representation per page and
coding, whoever answers and however often it was asked (docs/delivery.md, "One answer per
page and coding"). The answers are kept by the response cache (app.response_cache), which
changes only what a repeat costs.

Levels: each within 1.15 x of the reference whole-page compressors (gzip -6, zstd -3,
br 5) on hand-written text, in less of their time (docs/delivery.md has the figures). The
gzip trailer's CRC-32 is ISA-L's, as for composed pages.
"""

from __future__ import annotations

import struct
import threading
import zlib

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
