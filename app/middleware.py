"""Middleware every request passes: the request-line bound and the headers every answer
carries, errors included."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import falcon

from app.errors import APIError

# gunicorn's limit_request_line (app/gunicorn_conf.py), nginx's large_client_header_buffers
# (deploy/nginx/nginx.conf) and this bound are one limit: a request line over it is a 414.
REQUEST_LINE_MAX = 8190
# The longest path and query that can never make a line over the bound (method, spaces and
# protocol version take at most 30 bytes): the exact length is worked out only beyond it.
_SURELY_SHORT = REQUEST_LINE_MAX - 30
_PATH_SAFE = "/:@!$&'()*+,;=%"


class RequestFrame:
    """What every request passes on its way in and every answer on its way out, errors
    included. One middleware object for both: Falcon calls each hook of each object on
    every request the response cache does not answer.

    In: a 414 for a request line over REQUEST_LINE_MAX bytes, before any route. gunicorn
    refuses such a line itself; granian has no such limit (it accepted 20 KB lines with
    10,000 parameters), so the app applies the same one: the same request gets the same
    answer under either server.

    Out: `X-Content-Type-Options: nosniff`. Bodies are JSON; browsers must not sniff them
    into HTML or script."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        env = req.env
        path, query = env.get("PATH_INFO", ""), env.get("QUERY_STRING", "")
        if len(path) + len(query) <= _SURELY_SHORT:
            return
        # gunicorn gives the line's target as sent (RAW_URI); other servers only the decoded
        # path, which is measured as a client must have encoded it.
        target = env.get("RAW_URI") or quote(path.encode("latin-1", "replace"), safe=_PATH_SAFE)
        if query and "?" not in target:
            target += "?" + query
        length = len(req.method) + len(target) + len(env.get("SERVER_PROTOCOL", "HTTP/1.1")) + 2
        if length > REQUEST_LINE_MAX:
            raise APIError(
                414,
                f"URI Too Long: Request Line is too large ({length} > {REQUEST_LINE_MAX})",
            )

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        # Falcon's dict of lower-cased header names, as set_header writes it.
        resp._headers["x-content-type-options"] = "nosniff"
