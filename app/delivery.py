"""From a described body to the bytes on the wire, in the encoding the client accepts
(docs/delivery.md).

Resources describe what they answer, never bytes of one encoding:

- `Composed`: a head, runs of pre-serialised records, a tail (lists, latest, search, one
  article, sitemap pages). Every record exists in identity, gzip and zstd
  (app.compression); one article also as a whole brotli stream.
- `Precomputed`: a whole static body in each encoding (categories, feeds, sitemaps), made at
  build time by `app.compression.precompress`.

`send` negotiates, sets the validators and caching headers, answers 304, or assembles the
body with `assemble`: the one function that writes a body in an encoding. A composed page
(`page=True`: not one article) goes out compressed whole in every coding but identity
(app.whole_pages), so that its bytes depend on the request alone (docs/delivery.md, "One
answer per page and coding").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

import falcon

from app import compression, whole_pages
from app.bounded import Bounded
from app.bundle.segment import SEPARATORS, Run
from app.compression import BR, GZIP, IDENTITY, ZSTD
from app.errors import APIError
from app.http_cache import etag_matches
from app.negotiation import Offer, choose
from app.whole_pages import WHOLE_CODEC_ID


class Composed(NamedTuple):
    """`head` + the records of `runs` joined by their separator + `tail`; `kind` names the
    records (app.bundle.format.RECORDS: "articles", "summaries" or "sitemap"). `br` is the
    run whose brotli piece is the whole body, when stored: one article, whose body is that
    run alone (no head, no tail). A tuple: one is
    made per request, and a tuple is the cheapest record to make."""

    kind: str
    head: bytes
    runs: Sequence[Run[Any]]
    tail: bytes
    br: Run[Any] | None = None


@dataclass(frozen=True, slots=True)
class Precomputed:
    """A whole body in every encoding it is sent in; `identity` is required. For static
    documents (feeds, sitemaps): `{"identity": body, **app.compression.precompress(body)}`,
    usually mapped from the bundle."""

    variants: Mapping[str, bytes | memoryview]


@dataclass(frozen=True, slots=True)
class Whole:
    """A body made at request time (the news sitemap's window): sent compressed whole.
    `kept` holds compressed bodies by their ETag (a strong tag names one byte string), for
    a body the response cache may not keep (it follows the clock)."""

    identity: bytes
    kept: Bounded[str, bytes] | None = None


Body = Composed | Precomputed | Whole


class Answer(NamedTuple):
    """Everything `send` needs to answer one request, but the request itself: the body and
    what is fixed for it (its identity ETag, Cache-Control, Surrogate-Key, the codec of its
    compressed bytes, Last-Modified), worked out before the request where they are fixed
    (per article when the bundle is loaded, per route when it is mounted).

    `etag` is the quoted identity tag; `cache_control` the route's Cache-Control value
    (app.http_cache.CachePolicy.header); `surrogate_keys` the space-separated keys
    (app.surrogate_keys) naming what the body depends on; `codec` the CODEC_ID the
    compressed bytes were made with (LanguageData.codec); `last_modified` the Last-Modified
    value (an HTTP-date) or None; `media_type` the Content-Type when it is not JSON (set on
    the 200 only: a 304 carries none); `status` another status than 200 (a retracted
    article's 410); `page` marks a composed page (a list, latest, search, the corrections
    log, a sitemap page), sent compressed whole in every coding but identity."""

    body: Body
    etag: str
    cache_control: str
    surrogate_keys: str
    codec: str
    last_modified: str | None = None
    media_type: str | None = None
    status: int = 200
    page: bool = False


def _records(body: Composed, encoding: str) -> list[memoryview | bytes]:
    """The runs' slices in `encoding`, with the separators between them."""
    runs = body.runs
    if len(runs) == 1:  # one slice and no separator: most list and latest pages
        source, start, stop = runs[0]
        return [source.encoded_run(body.kind, encoding, start, stop)]
    if not runs:
        return []
    kind = body.kind
    parts: list[memoryview | bytes] = [SEPARATORS[kind][encoding]] * (2 * len(runs) - 1)
    parts[::2] = [source.encoded_run(kind, encoding, a, b) for source, a, b in runs]
    return parts


def assemble(body: Body, encoding: str) -> bytes:
    """The body's bytes in `encoding` (one of `offers(body)`)."""
    if isinstance(body, Precomputed):
        return bytes(body.variants[encoding])
    if isinstance(body, Whole):
        if encoding == IDENTITY:
            return body.identity
        return whole_pages.compress(encoding, body.identity)
    if encoding == IDENTITY:
        if body.br is not None:  # one article: its record, nothing around it
            source, start, stop = body.br
            return bytes(source.encoded_run(body.kind, IDENTITY, start, stop))
        return b"".join([body.head, *_records(body, IDENTITY), body.tail])
    if encoding == BR and body.br is not None:
        return bytes(body.br.encoded(body.kind, BR))
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
        return len(body.br.encoded(body.kind, BR))
    return sum(len(part) for part in _records(body, encoding))


def _length(data: bytes | memoryview) -> Callable[[], int]:
    return lambda: len(data)


# A composed page: zstd (pieces, or whole and cheap), gzip (its CRC-32, or zlib 4), br
# (always compressed whole, the slowest), then identity, whose cost is bandwidth. Fixed
# costs, so the coding a header gets never depends on what a process has cached.
PAGE_OFFERS = [
    Offer(ZSTD, 0, lambda: 0),
    Offer(GZIP, 1, lambda: 0),
    Offer(BR, 2, lambda: 0),
    Offer(IDENTITY, 3, lambda: 0),
]


def offers(body: Body) -> list[Offer]:
    if isinstance(body, Whole):
        return PAGE_OFFERS
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


def not_modified_since(header: str | None, last_modified: str | None) -> bool:
    """If-Modified-Since (RFC 9110, 13.1.3): true when the representation, last modified at
    the HTTP-date `last_modified`, has not changed since that date. An unparsable date is
    ignored, as the RFC asks."""
    if not header or last_modified is None:
        return False
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):
        return False
    if since.tzinfo is None:  # "-0000" and asctime parse naive: an HTTP-date is GMT
        since = since.replace(tzinfo=UTC)
    return _moment(last_modified) <= since


_MONTHS = {
    name: n
    for n, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1
    )
}


def _moment(http_date: str) -> datetime:
    """The time of an HTTP-date this server wrote ("Thu, 01 Jan 1970 00:00:00 GMT"), read by
    its fixed fields: email.utils would take a year under 100 for one of this century."""
    day, month, year, clock = http_date[5:7], http_date[8:11], http_date[12:16], http_date[17:25]
    hour, minute, second = clock.split(":")
    return datetime(
        int(year), _MONTHS[month], int(day), int(hour), int(minute), int(second), tzinfo=UTC
    )


def not_acceptable() -> APIError:
    return APIError(
        406,
        "Not Acceptable: no content coding in Accept-Encoding is available "
        "(identity, gzip, br, zstd)",
        headers={"Vary": "Accept-Encoding"},
    )


def send(req: falcon.Request, resp: falcon.Response, answer: Answer) -> None:
    """Send `answer`'s body in the negotiated encoding with its ETag, or 304; 406 when the
    client refuses every encoding. With another status than 200 (a retracted article's 410)
    `If-None-Match` is ignored, as RFC 9110 (13.2.1) requires of a non-2xx answer.

    A `page` goes out compressed whole in every coding but identity (app.whole_pages), on
    its first request as on every later one, so that its bytes and ETag depend on the
    request alone. `last_modified` answers If-Modified-Since when the request has no
    If-None-Match (RFC 9110, 13.2.2)."""
    body = answer.body
    env = req.env  # the request headers, read as Falcon's get_header reads them
    header = env.get("HTTP_ACCEPT_ENCODING")
    paged = answer.page and type(body) is Composed and body.br is None
    if header is None:  # no Accept-Encoding: identity, and no offers to weigh
        encoding = IDENTITY
    else:
        chosen = choose(header, PAGE_OFFERS if paged else offers(body))
        if chosen is None:
            raise not_acceptable()
        encoding = chosen
    whole = encoding != IDENTITY and (paged or type(body) is Whole)
    if encoding == IDENTITY:
        tag = answer.etag
    else:
        # A page compressed whole is other bytes than its composed form: `w` before the codec.
        tag = encoded_etag(answer.etag, encoding, f"w{WHOLE_CODEC_ID}" if whole else answer.codec)
    # Falcon keeps the header names lower-cased in this dict (what Response.set_header does).
    headers = resp._headers
    headers["vary"] = "Accept-Encoding"
    headers["etag"] = tag
    headers["cache-control"] = answer.cache_control
    headers["surrogate-key"] = answer.surrogate_keys
    last_modified = answer.last_modified
    if last_modified is not None:
        headers["last-modified"] = last_modified
    if_none_match = env.get("HTTP_IF_NONE_MATCH")
    if answer.status != 200:
        resp.status = answer.status
    elif (if_none_match and etag_matches(if_none_match, tag)) or (
        if_none_match is None
        and "HTTP_IF_MODIFIED_SINCE" in env  # most requests are not conditional
        and not_modified_since(env["HTTP_IF_MODIFIED_SINCE"], last_modified)
    ):
        # Validators and Vary only: no representation metadata on a 304 (RFC 9110, 15.4.5).
        resp.status = falcon.HTTP_304
        return
    if encoding != IDENTITY:
        headers["content-encoding"] = encoding
    if answer.media_type is not None:
        resp.content_type = answer.media_type
    if whole and type(body) is Whole and body.kept is not None:
        data = body.kept.get(tag)
        if data is None:
            data = assemble(body, encoding)
            body.kept.put(tag, data, len(data))
        resp.data = data
    elif whole and paged:
        resp.data = whole_pages.compress(encoding, assemble(body, IDENTITY))
    else:
        resp.data = assemble(body, encoding)
