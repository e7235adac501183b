"""RFC 8288 `Link` header for paged collections (docs/api.md §7).

Relative URLs: the request path plus every query parameter as sent, with only `page`
replaced. `first` and `last` are always present (`last` is page 1 for an empty
collection); `prev` and `next` only where that page exists. A page beyond the last gets
`prev` pointing at the last page, so a client that overshot can step back.
"""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl, quote, urlencode

import falcon

from app.params import int_text

# RFC 3986 pchar characters other than unreserved ones, kept as they are in a path.
_PATH_SAFE = "/:@!$&'()*+,;="
_CACHEABLE_CHARS = 512


def link_header(req: falcon.Request, page: int, page_size: int, total: int) -> str:
    last = max(1, -(-total // page_size))
    path, query = req.path, req.query_string
    # Only short targets are cached (as Accept-Encoding values are, app/negotiation.py): a
    # client sending 8 KB query strings cannot fill the cache with megabytes.
    head = (_head if len(path) + len(query) <= _CACHEABLE_CHARS else _head.__wrapped__)(path, query)
    links = [f'<{head}1>; rel="first"']
    if page > 1:
        links.append(f'<{head}{int_text(min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{head}{int_text(page + 1)}>; rel="next"')
    links.append(f'<{head}{int_text(last)}>; rel="last"')
    return ", ".join(links)


@functools.lru_cache(maxsize=4096)  # popular pages recur; the encoding is most of the work
def _head(path: str, query: str) -> str:
    """`path?kept&page=`: the path percent-encoded (an article id may hold spaces or Hangul,
    and a header is ASCII), every parameter but `page` encoded once for all the links."""
    head = quote(path, safe=_PATH_SAFE) + "?"
    if query:
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "page"]
        if kept:
            head += urlencode(kept) + "&"
    return head + "page="
