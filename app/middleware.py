"""Response headers every answer carries, errors included."""

from __future__ import annotations

from typing import Any

import falcon


class SecurityHeaders:
    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        # Bodies are JSON; browsers must not sniff them into HTML or script.
        resp.set_header("X-Content-Type-Options", "nosniff")
