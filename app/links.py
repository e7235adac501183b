"""RFC 8288 `Link` header for paged collections (docs/api.md §7).

Relative URLs: the request path plus the query parameters the operation knows (its query
model's names), with only `page` replaced. Unknown parameters are left out: the server
ignores them, and copying them into up to four targets let one request blow a response head
up to four times its own request line, past what the proxy in front accepts (docs/
reliability.md, "Bounded response heads"). A scalar parameter sent more than once keeps its
last value, which is the one the server used.

`first` and `last` are always present (`last` is page 1 for an empty collection); `prev`
and `next` only where that page exists. A page beyond the last gets `prev` pointing at the
last page, so a client that overshot can step back. A header that would still be longer
than LINK_MAX_CHARS (a category or date bound thousands of characters long) is not sent:
the body's `page` and `total_pages` say the same.
"""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl, quote, urlencode

import falcon
import pydantic

from app import params
from app.params import int_text

# RFC 3986 pchar characters other than unreserved ones, kept as they are in a path.
_PATH_SAFE = "/:@!$&'()*+,;="
_CACHEABLE_CHARS = 512
# Four targets of this size and the service's other headers stay under 8 KB, the response
# head every layer in front accepts (nginx's proxy_buffer_size, deploy/nginx/nginx.conf).
LINK_MAX_CHARS = 6144


def link_header(
    req: falcon.Request, model: type[pydantic.BaseModel], page: int, page_size: int, total: int
) -> str | None:
    """The header for this page of a collection whose query is `model`; None when it would
    be longer than LINK_MAX_CHARS."""
    last = max(1, -(-total // page_size))
    path, query = req.path, req.query_string
    # Only short targets are cached (as Accept-Encoding values are, app/negotiation.py): a
    # client sending 8 KB query strings cannot fill the cache with megabytes.
    head = (_head if len(path) + len(query) <= _CACHEABLE_CHARS else _head.__wrapped__)(
        path, query, model
    )
    links = [f'<{head}1>; rel="first"']
    if page > 1:
        links.append(f'<{head}{int_text(min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{head}{int_text(page + 1)}>; rel="next"')
    links.append(f'<{head}{int_text(last)}>; rel="last"')
    value = ", ".join(links)
    return value if len(value) <= LINK_MAX_CHARS else None


def set_link(
    req: falcon.Request,
    resp: falcon.Response,
    model: type[pydantic.BaseModel],
    page: int,
    page_size: int,
    total: int,
) -> None:
    value = link_header(req, model, page, page_size, total)
    if value is not None:
        resp.set_header("Link", value)


@functools.lru_cache(maxsize=4096)  # popular pages recur; the encoding is most of the work
def _head(path: str, query: str, model: type[pydantic.BaseModel]) -> str:
    """`path?kept&page=`: the path percent-encoded (an article id may hold spaces or Hangul,
    and a header is ASCII), each known parameter but `page` encoded once for all the links."""
    head = quote(path, safe=_PATH_SAFE) + "?"
    if query:
        known = params.names(model)
        kept: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name in known and name != "page":
                kept[name] = value  # the last value wins, in the place of the first
        if kept:
            head += urlencode(kept) + "&"
    return head + "page="
