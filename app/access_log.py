"""gunicorn access log as JSON lines (`logger_class` in app/gunicorn_conf.py).

One object per request, encoded by orjson, so a quote or newline a client puts in its
User-Agent or path cannot break a line the way it can in gunicorn's printf-style format.
`client` is the peer (nginx in the cluster); `forwarded_for` is the header nginx sets.
"""

from __future__ import annotations

import datetime
import os
import traceback
from typing import Any

import orjson
from gunicorn.glogging import Logger


def access_record(
    resp: Any, environ: dict[str, Any], request_time: datetime.timedelta
) -> dict[str, Any]:
    status = resp.status
    if isinstance(status, str):
        status = status.split(None, 1)[0]
    return {
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds"),
        "client": environ.get("REMOTE_ADDR"),
        "forwarded_for": environ.get("HTTP_X_FORWARDED_FOR"),
        "method": environ.get("REQUEST_METHOD"),
        "path": environ.get("RAW_URI"),
        "status": int(status) if str(status).isdigit() else status,
        "bytes": getattr(resp, "sent", None),
        "duration_ms": round(request_time.total_seconds() * 1000, 3),
        "user_agent": environ.get("HTTP_USER_AGENT"),
        "request_id": environ.get("HTTP_X_REQUEST_ID"),
        "pid": os.getpid(),
    }


class JsonAccessLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not self.access_log_enabled:
            return
        try:
            line = orjson.dumps(access_record(resp, environ, request_time)).decode()
            self.access_log.info("%s", line)
        except Exception:
            self.error(traceback.format_exc())
