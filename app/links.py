"""RFC 8288 `Link` header for paged collections (docs/api.md §7).

Relative URLs: the request path plus every query parameter as sent, with only `page`
replaced. `first` and `last` are always present (`last` is page 1 for an empty
collection); `prev` and `next` only where that page exists. A page beyond the last gets
`prev` pointing at the last page, so a client that overshot can step back.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import falcon

from app.params import int_text


def link_header(req: falcon.Request, page: int, page_size: int, total: int) -> str:
    last = max(1, -(-total // page_size))
    kept = [(k, v) for k, v in parse_qsl(req.query_string, keep_blank_values=True) if k != "page"]

    def url(number: int) -> str:
        return f"{req.path}?{urlencode([*kept, ('page', int_text(number))])}"

    links = [f'<{url(1)}>; rel="first"']
    if page > 1:
        links.append(f'<{url(min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{url(page + 1)}>; rel="next"')
    links.append(f'<{url(last)}>; rel="last"')
    return ", ".join(links)
