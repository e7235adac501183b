"""Content codings that compose (docs/delivery.md), shared by the builder and the server.

The builder compresses every article and summary record once, as a **piece**:

- gzip: a raw deflate stream ended with a full flush (Z_FULL_FLUSH), so each piece is
  byte-aligned and starts with an empty window; pieces placed one after another are one valid
  deflate stream. A body is the gzip header, the pieces, a final empty block and the trailer
  (CRC-32 and length of the identity body).
- zstd: one frame per piece. Concatenated frames are one valid zstd stream (RFC 8878, 3.1).

What the server writes per request (the list envelope's head and tail, the commas between
records) is never compressed: it goes out as deflate stored blocks or zstd raw blocks, built
here by hand, so composing a page is joining byte slices. Whole static bodies (one article,
categories, feeds, sitemaps) are also compressed in full, br included (`precompress`).
"""

from __future__ import annotations

import hashlib
import struct
import threading
import zlib
from collections.abc import Iterable

import brotli
import zstandard

# ISA-L's CRC-32 (PCLMUL) for the gzip trailer: 14x zlib's on a 77 KB page, same values.
from isal.isal_zlib import crc32 as _crc32

GZIP, BR, ZSTD, IDENTITY = "gzip", "br", "zstd", "identity"
ENCODINGS = (GZIP, BR, ZSTD)  # every content coding the server can send besides identity

# Levels chosen by size against build time on the sample corpus (docs/delivery.md).
# The same levels compress whole pages (app.whole_pages). zlib 4: 1.05-1.07 x zlib -6's size
# in a third to a half of its time (ISA-L's level 3 is faster still, but reaches 1.15 x on
# pages whose articles share paragraphs). br quality 5, the reference itself: quality 4
# (brotli's last fast level, 0.7 of the time) came to 1.19 x quality 5 on a Chinese page of
# the sample, past the 1.15 x bound; a kept page (app.response_cache) pays the difference once.
GZIP_LEVEL = 4
ZSTD_LEVEL = 3
BROTLI_QUALITY = 5

# What determines the compressed bytes: a bundle records it per language, its compressed
# ETags carry it, and a builder with another one rebuilds from scratch (same sources, same
# bytes, so incremental = full holds across a change of level or library).
CODEC_ID = hashlib.blake2b(
    repr(
        (
            GZIP_LEVEL,
            ZSTD_LEVEL,
            BROTLI_QUALITY,
            zlib.ZLIB_RUNTIME_VERSION,
            zstandard.ZSTD_VERSION,
            brotli.version,
        )
    ).encode(),
    digest_size=3,
).hexdigest()

# gzip member header: no name, no time (0: deterministic), no flags, OS 255 ("unknown").
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# A final deflate block with no data (fixed Huffman, end-of-block only).
DEFLATE_END = b"\x03\x00"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_STORED_MAX = 0xFFFF  # bytes per deflate stored block
_RAW_BLOCK_MAX = 1 << 17  # bytes per zstd block (Block_Maximum_Size)


def gzip_piece(data: bytes | memoryview) -> bytes:
    """Raw deflate of `data`, ended with a full flush: byte-aligned, independent."""
    c = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -15, 9)
    return c.compress(data) + c.flush(zlib.Z_FULL_FLUSH)


# A compressor object is not safe to share between threads: one per thread, reused (making
# one per record would allocate its window every time).
_local = threading.local()


def zstd_piece(data: bytes | memoryview) -> bytes:
    """One zstd frame of `data`."""
    compressor = getattr(_local, "zstd", None)
    if compressor is None:
        compressor = _local.zstd = zstandard.ZstdCompressor(
            level=ZSTD_LEVEL, write_checksum=False, write_content_size=True
        )
    return bytes(compressor.compress(bytes(data)))


def stored_deflate(data: bytes) -> bytes:
    """`data` as deflate stored (uncompressed, non-final) blocks: what the server writes
    around pieces. Empty data is no block at all."""
    out = bytearray()
    for start in range(0, len(data), _STORED_MAX):
        chunk = data[start : start + _STORED_MAX]
        out += struct.pack("<BHH", 0, len(chunk), len(chunk) ^ 0xFFFF) + chunk
    return bytes(out)


def raw_zstd_frame(data: bytes) -> bytes:
    """`data` as one zstd frame of raw (uncompressed) blocks; empty data is no frame."""
    n = len(data)
    if not n:
        return b""
    # Single segment (no window descriptor) with the smallest content-size field that fits.
    if n < 256:
        head = bytes((0x20,)) + bytes((n,))
    elif n < 65536 + 256:
        head = bytes((0x60,)) + struct.pack("<H", n - 256)
    elif n < 1 << 32:
        head = bytes((0xA0,)) + struct.pack("<I", n)
    else:
        head = bytes((0xE0,)) + struct.pack("<Q", n)
    out = bytearray(_ZSTD_MAGIC + head)
    for start in range(0, n, _RAW_BLOCK_MAX):
        chunk = data[start : start + _RAW_BLOCK_MAX]
        last = 1 if start + _RAW_BLOCK_MAX >= n else 0
        out += ((len(chunk) << 3) | last).to_bytes(3, "little") + chunk
    return bytes(out)


def separators(sep: bytes) -> dict[str, bytes]:
    """The separator between records in each encoding, for records whose identity form is
    joined by `sep`. Pieces in a segment are joined by these, as identity records are joined
    by `sep`: a run of consecutive records is one slice. br pieces are whole bodies (one
    article each) and are never composed."""
    return {IDENTITY: sep, GZIP: stored_deflate(sep), ZSTD: raw_zstd_frame(sep), BR: b""}


def precompress_br(body: bytes | memoryview) -> bytes:
    return brotli.compress(bytes(body), quality=BROTLI_QUALITY)


def framed(encoding: str, data: bytes) -> bytes:
    """Request-time bytes (an envelope's head or tail) as a part of a composed body."""
    if encoding == GZIP:
        return stored_deflate(data)
    if encoding == ZSTD:
        return raw_zstd_frame(data)
    return data


def gzip_body(parts: Iterable[bytes | memoryview], identity: Iterable[bytes | memoryview]) -> bytes:
    """A gzip member from deflate `parts` that decompress to the concatenated `identity`.

    The trailer's CRC-32 is chained over the identity slices: zlib's at 4.4 GB/s is faster
    than combining stored per-piece CRCs in Python, ISA-L's (when installed) 14x faster
    again (docs/delivery.md, "The gzip trailer's CRC-32").
    """
    crc, size = 0, 0
    for part in identity:
        crc = _crc32(part, crc)
        size += len(part)
    return b"".join([GZIP_HEADER, *parts, DEFLATE_END, struct.pack("<II", crc, size & 0xFFFFFFFF)])


def precompress(body: bytes) -> dict[str, bytes]:
    """Every encoding of a whole static body (feeds, sitemaps, categories, one article),
    sent as an `app.delivery.Precomputed` body. Deterministic: same body, same bytes."""
    return {
        GZIP: gzip_body([gzip_piece(body)], [body]),
        BR: precompress_br(body),
        ZSTD: zstd_piece(body),
    }
