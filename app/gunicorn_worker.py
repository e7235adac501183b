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

The threaded worker also leaves at once, and leaves no connection waiting, when its master
dies (SIGKILL, OOM kill): see `JsonErrorThread`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal
import socket
import sys
from typing import Any

import orjson
from gunicorn.http import wsgi
from gunicorn.workers.base import Worker
from gunicorn.workers.gthread import TConn, ThreadWorker
from gunicorn.workers.sync import StopWaiting, SyncWorker

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
    """gunicorn's sync worker with JSON error answers, waiting with poll(2).

    gunicorn's sync worker waits for a connection with select(2), which refuses any
    descriptor numbered 1024 or above ("filedescriptor out of range in select()"). A bundle
    maps one file per object and Python's mmap keeps a descriptor for each: 1,397 at
    9 x 100,000 articles, all opened by the master before it forks (preload_app). A worker's
    own pipe then gets a number above 1024, and every worker but the first died as it
    started, to be forked again, over and over (docs/operations.md, "Open files"). poll(2)
    has no such bound; the rest is gunicorn's `wait`."""

    _poller: Any = None
    _by_fd: dict[int, Any]

    def wait(self, timeout: float) -> Any:
        if self._poller is None:
            self._poller = select.poll()
            self._by_fd = {}
            for waitable in self.wait_fds:
                fd = waitable if isinstance(waitable, int) else waitable.fileno()
                self._poller.register(fd, select.POLLIN)
                self._by_fd[fd] = waitable
        self.notify()
        events = self._poller.poll(None if timeout is None else timeout * 1000)
        if any(event & select.POLLNVAL for _, event in events):
            # A closed listener: where gunicorn's select() raises EBADF.
            if self.nr < 0:
                return self.sockets
            raise StopWaiting
        ready = [self._by_fd[fd] for fd, _ in events]
        if self.PIPE[0] in ready:
            os.read(self.PIPE[0], 1)
        return ready


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def signal_when_parent_dies(sig: int) -> bool:
    """Ask Linux to send this process `sig` when its parent dies; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


class JsonErrorThread(JsonErrorsMixin, ThreadWorker):
    """gunicorn's gthread worker with JSON error answers, which refuses new connections at
    once when its master is gone and serves every connection already made to it.

    A worker whose master died (SIGKILL, OOM kill) is an orphan: nothing replaces it, and
    gunicorn's own worker only notices on its next loop tick (up to a second). It then stops
    accepting but keeps the listening socket open until its connections are done, and it
    goes on answering with keep-alive on them, so a proxy's idle connections keep it there
    for the keep-alive timeout (5 s). A connection made to the socket meanwhile waits in the
    accept queue, unanswered, until the last worker closes the socket and it is reset:
    measured, a new connection 1.5 s after the master's death waited 5.0 s for its reset.
    Behind nginx, a GET sent on such a connection waits that long before nginx retries it
    on another instance, and a POST, already sent, is answered 502.

    Here the worker asks Linux for SIGTERM when its master dies (gunicorn's graceful stop,
    at once instead of at the next tick), and an orphan then (1) accepts and serves the
    connections already queued, (2) shuts the listening socket down for reading, which on a
    unix socket makes every later connect() fail at once with ECONNREFUSED, so nginx goes to
    another instance without waiting, and (3) takes the few that arrived between the two,
    then finishes its requests in flight and exits. Its sibling workers share the socket
    (and get the same SIGTERM); one whose accept() finds nothing while it is an orphan stops
    the same way, instead of polling a socket that stays readable once shut down. Only
    orphans do this: a worker told to stop by a live master (a reload, a graceful stop)
    leaves the socket to the master, which still serves it or closes it itself.
    """

    def init_signals(self) -> None:
        super().init_signals()
        # After gunicorn's handlers: SIGTERM is its graceful stop from here on.
        signal_when_parent_dies(signal.SIGTERM)

    def _orphaned(self) -> bool:
        return os.getppid() != self.ppid

    def is_parent_alive(self) -> bool:
        if super().is_parent_alive():
            return True
        self.alive = False  # answers say Connection: close, kept-alive ones linger briefly
        return False

    def set_accept_enabled(self, enabled: bool) -> None:
        if not enabled and self._orphaned():
            self.alive = False
            self._close_listeners()
        super().set_accept_enabled(enabled)

    def accept(self, listener: Any) -> None:
        if self._accept_one(listener) is None and self._orphaned():
            # A sibling orphan shut the socket down (it stays readable, accept() finds
            # nothing): stop now rather than at the next tick.
            self.alive = False
            self.method_queue.defer(lambda: None)  # wake the loop so that it stops

    def _accept_one(self, listener: Any) -> bool | None:
        """gunicorn's accept: True when a connection was taken, False when one went away
        before it could be, None when there was none (EAGAIN; EINVAL: shut down)."""
        try:
            client, addr = listener.accept()
        except OSError as exc:
            if exc.errno == errno.ECONNABORTED:
                return False
            if exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINVAL):
                return None
            raise
        self.nr_conns += 1
        client.setblocking(True)
        self.enqueue_req(TConn(self.cfg, client, addr, listener.getsockname()))
        return True

    def _close_listeners(self) -> None:
        """Serve what is queued, refuse what comes next (an orphan only: see the class)."""
        for listener in self.sockets:
            listener.setblocking(False)
            while self._accept_one(listener) is not None:
                pass
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RD)
            while self._accept_one(listener) is not None:
                pass
