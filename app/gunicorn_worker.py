"""gunicorn workers whose own error answers follow docs/api.md §1.

gunicorn answers requests it cannot parse (bad request line, header too large, URI too
long, invalid header) itself, before the app sees them, with an HTML page. docs/api.md
says every error is JSON with a `detail`, and every response carries
`X-Content-Type-Options: nosniff`. These workers keep gunicorn's status choice (and its
logging) and only rewrite the bytes it writes: `Worker.handle_error` is the single place
gunicorn builds such a page, and it writes it with one `sendall` on the client socket.

Use `app.gunicorn_worker.JsonErrorSync` or `app.gunicorn_worker.JsonErrorThread` as
`worker_class` (app/gunicorn_conf.py maps NEWS_WORKER_CLASS=sync/gthread to them). Their
names must not end in "SyncWorker": gunicorn swaps such classes for its own gthread worker.
"""

from __future__ import annotations

import socket
from typing import Any

import orjson
from gunicorn.http import wsgi
from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import ThreadWorker
from gunicorn.workers.sync import SyncWorker

# Longest client-supplied text echoed into `detail` (gunicorn's message quotes the input).
_DETAIL_MAX = 200
_SERVER_ERROR = 500


def json_error_response(status: int, reason: str, detail: str) -> bytes:
    body = orjson.dumps({"detail": detail})
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        "X-Content-Type-Options: nosniff\r\n"
        "Cache-Control: no-store\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def _detail(status: int, reason: str, exc: BaseException) -> str:
    if status >= _SERVER_ERROR:
        # Never the exception text of a server-side failure: it may name paths or internals.
        return reason
    message = str(exc).strip()
    if not message:
        return reason
    if len(message) > _DETAIL_MAX:
        message = message[:_DETAIL_MAX] + "..."
    return f"{reason}: {message}"


class _ErrorPageRewriter:
    """Stands in for the client socket during `handle_error`: the HTML page gunicorn
    sends is replaced by the same status with a JSON body; everything else is the socket."""

    def __init__(self, sock: socket.socket, exc: BaseException) -> None:
        self._sock = sock
        self._exc = exc

    def sendall(self, data: bytes) -> None:
        status_line = data.split(b"\r\n", 1)[0].decode("latin-1")
        _version, code, reason = [*status_line.split(" ", 2), "", ""][:3]
        try:
            status = int(code)
        except ValueError:  # not the page we expected: pass it through unchanged
            self._sock.sendall(data)
            return
        reason = reason or "Error"
        self._sock.sendall(json_error_response(status, reason, _detail(status, reason, self._exc)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class OneWriteResponse(wsgi.Response):
    """gunicorn's HTTP/1 response, with the head sent in the same write as the body.

    gunicorn writes the head and the body with two `sendall` calls. A worker killed between
    them leaves the proxy with a head and no body: too late for it to retry the request on
    another instance, so the client gets a broken answer. Sent together (the app's bodies
    are single byte strings with a Content-Length), a killed worker has either sent nothing,
    and nginx retries, or the whole answer. The head waits only until the first body bytes
    or the end of the response; chunked and sendfile answers send it first, as gunicorn does.
    """

    _pending_head: bytes | None = None
    headers_sent: bool  # gunicorn's, set in its __init__

    def send_headers(self) -> None:
        if self.headers_sent:
            return
        tosend = self.default_headers()
        tosend.extend([f"{k}: {v}\r\n" for k, v in self.headers])
        self._pending_head = ("{}\r\n".format("".join(tosend))).encode("latin-1")
        self.headers_sent = True  # as far as gunicorn's bookkeeping goes: the head is fixed

    def _flush_head(self) -> None:
        head, self._pending_head = self._pending_head, None
        if head:
            self.sock.sendall(head)

    def _emit_body(self, data: bytes) -> None:
        head, self._pending_head = self._pending_head, None
        if head and not self.chunked:
            self.sock.sendall(head + data)
            return
        if head:
            self.sock.sendall(head)
        super()._emit_body(data)

    def sendfile(self, respiter: Any) -> Any:
        self.send_headers()
        self._flush_head()
        return super().sendfile(respiter)

    def close(self) -> None:
        self.send_headers()
        self._flush_head()
        super().close()


class JsonErrorsMixin(Worker):
    """Mixed into gunicorn's worker classes (their common base, for the `super()` calls)."""

    def init_process(self) -> None:
        # In this worker process only: gunicorn builds each HTTP/1 response from the class
        # named Response in gunicorn.http.wsgi (HTTP/2 passes its own class).
        wsgi.Response = OneWriteResponse
        super().init_process()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        super().handle_error(req, _ErrorPageRewriter(client, exc), addr, exc)


class JsonErrorSync(JsonErrorsMixin, SyncWorker):
    """gunicorn's sync worker with JSON error answers."""


class JsonErrorThread(JsonErrorsMixin, ThreadWorker):
    """gunicorn's gthread worker with JSON error answers."""
