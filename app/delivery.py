"""From a described body to the bytes on the wire, in the encoding the client accepts
(docs/delivery.md).

Resources describe what they answer, never bytes of one encoding:

- `Composed`: a head, runs of pre-serialised records, a tail (lists, latest, search, one
  article, sitemap pages). Every record exists in identity, gzip and zstd
  (app.compression); one article also as a whole brotli stream.
- `Precomputed`: a whole static body in each encoding (categories, feeds, sitemaps), made at
  build time by `app.compression.precompress`.

`send` negotiates, sets the validators and caching headers, answers 304, or assembles the
body with `assemble`: the one function that writes a body in an encoding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import falcon

from app import compression
from app.bundle.reader import SEPARATORS, Run
from app.compression import BR, GZIP, IDENTITY, ZSTD
from app.errors import APIError
from app.http_cache import CachePolicy, etag_matches
from app.negotiation import Offer, choose


@dataclass(frozen=True, slots=True)
class Composed:
    """`head` + the records of `runs` joined by their separator + `tail`; `kind` names the
    records (app.bundle.format.RECORDS: "articles", "summaries" or "sitemap"). `br` is the
    whole body as brotli, when stored (one article)."""

    kind: str
    head: bytes
    runs: Sequence[Run]
    tail: bytes
    br: bytes | memoryview | None = None


@dataclass(frozen=True, slots=True)
class Precomputed:
    """A whole body in every encoding it is sent in; `identity` is required."""

    variants: Mapping[str, bytes | memoryview]


Body = Composed | Precomputed


def _records(body: Composed, encoding: str) -> list[memoryview | bytes]:
    """The runs' slices in `encoding`, with the separators between them."""
    if not body.runs:
        return []
    sep = SEPARATORS[body.kind][encoding]
    parts: list[memoryview | bytes] = [sep] * (2 * len(body.runs) - 1)
    parts[::2] = [run.encoded(body.kind, encoding) for run in body.runs]
    return parts


def assemble(body: Body, encoding: str) -> bytes:
    """The body's bytes in `encoding` (one of `offers(body)`)."""
    if isinstance(body, Precomputed):
        return bytes(body.variants[encoding])
    if encoding == IDENTITY:
        return b"".join([body.head, *_records(body, IDENTITY), body.tail])
    if encoding == BR and body.br is not None:
        return bytes(body.br)
    pieces = [
        compression.framed(encoding, body.head),
        *_records(body, encoding),
        compression.framed(encoding, body.tail),
    ]
    if encoding == ZSTD:
        return b"".join(pieces)
    if encoding == GZIP:
        return compression.gzip_body(pieces, [body.head, *_records(body, IDENTITY), body.tail])
    raise ValueError(f"no {encoding} for this body")


def _composed_size(body: Composed, encoding: str) -> int:
    if encoding == BR and body.br is not None:
        return len(body.br)
    return sum(len(part) for part in _records(body, encoding))


def _length(data: bytes | memoryview) -> Callable[[], int]:
    return lambda: len(data)


def offers(body: Body) -> list[Offer]:
    if isinstance(body, Precomputed):  # identity competes on size (tiny bodies grow)
        return [Offer(e, 0, _length(v)) for e, v in body.variants.items()]
    out = [
        Offer(IDENTITY, 2, lambda: 0),
        Offer(ZSTD, 0, lambda: _composed_size(body, ZSTD)),
        Offer(GZIP, 1, lambda: _composed_size(body, GZIP)),  # the trailer's CRC-32
    ]
    if body.br is not None:
        out.append(Offer(BR, 0, lambda: _composed_size(body, BR)))
    return out


def encoded_etag(etag: str, encoding: str, codec: str) -> str:
    """Each encoding's own strong tag: identity keeps the tag it always had; the others name
    the coding and the codec that made the bytes (app.compression.CODEC_ID)."""
    return etag if encoding == IDENTITY else f'{etag[:-1]}-{encoding}.{codec}"'


def not_acceptable() -> APIError:
    return APIError(
        406,
        "Not Acceptable: no content coding in Accept-Encoding is available "
        "(identity, gzip, br, zstd)",
        headers={"Vary": "Accept-Encoding"},
    )


def send(
    req: falcon.Request,
    resp: falcon.Response,
    body: Body,
    etag: str,
    cache: CachePolicy,
    surrogate_keys: str,
    codec: str,
    media_type: str | None = None,
    status: int = 200,
) -> None:
    """Send `body` in the negotiated encoding with its ETag, or 304; 406 when the client
    refuses every encoding. With another `status` than 200 (a retracted article's 410)
    `If-None-Match` is ignored, as RFC 9110 (13.2.1) requires of a non-2xx answer.
    `etag` is the quoted identity tag; `surrogate_keys` the space-separated keys
    (app.surrogate_keys) naming what the body depends on; `codec` the
    CODEC_ID the compressed bytes were made with (LanguageData.codec); `media_type` the
    Content-Type when it is not JSON (set on the 200 only: a 304 carries none)."""
    header = req.get_header("Accept-Encoding")
    encoding = IDENTITY if header is None else choose(header, offers(body))
    if encoding is None:
        raise not_acceptable()
    tag = encoded_etag(etag, encoding, codec)
    resp.set_header("Vary", "Accept-Encoding")
    resp.set_header("ETag", tag)
    resp.set_header("Cache-Control", cache.header)
    resp.set_header("Surrogate-Key", surrogate_keys)
    if status != 200:
        resp.status = status
    elif etag_matches(req.get_header("If-None-Match"), tag):
        # Validators and Vary only: no representation metadata on a 304 (RFC 9110, 15.4.5).
        resp.status = falcon.HTTP_304
        return
    if encoding != IDENTITY:
        resp.set_header("Content-Encoding", encoding)
    if media_type is not None:
        resp.content_type = media_type
    resp.data = assemble(body, encoding)


def send_precomputed(
    req: falcon.Request,
    resp: falcon.Response,
    variants: Mapping[str, bytes | memoryview],
    etag: str,
    cache: CachePolicy,
    surrogate_keys: str,
    codec: str,
    media_type: str | None = None,
) -> None:
    """For whole static documents (feeds, sitemaps): `variants` is
    `{"identity": body, **app.compression.precompress(body)}`, usually mapped from the bundle
    (whose LanguageData.codec is `codec`); `media_type` e.g. "application/atom+xml"."""
    send(req, resp, Precomputed(variants), etag, cache, surrogate_keys, codec, media_type)
