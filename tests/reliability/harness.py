"""A real gunicorn serving a real bundle, for the reliability tests and runners.

No pytest imports here, so that plain scripts could use it too. The server itself is
tests/server.py's; this adds these tests' settings, raw sockets and /proc readings.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from tests.http_support import Response, free_port
from tests.server import BIN as BIN  # re-exported: fuzz.py imports it from here
from tests.server import REPO
from tests.server import Server as BaseServer

SAMPLE_SRC = REPO / "data" / "sample"
ADMIN_TOKEN = "rel-admin-7c1f9e2b5d"  # distinctive, so a grep of the logs cannot miss it


def build_sample_bundle(out: Path) -> str:
    """The sample corpus, built by the real builder; returns the bundle id."""
    from app.builder.builder import build

    return build(SAMPLE_SRC, out)


def sample_article_ids(bundle_dir: Path, language: str = "en") -> list[str]:
    from app.bundle.reader import Bundle

    data = Bundle.load(bundle_dir).languages[language]
    runs = data.runs(0, data.count)
    return [
        orjson.loads(run.segment.record(i))["id"]
        for run in runs
        for i in range(run.start, run.stop)
    ]


# The hostile-input tests call a response a reply.
Reply = Response


def parse_response(raw: bytes) -> Reply:
    """One HTTP/1.1 response read off a socket that the server then closed."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1]) if lines and " " in lines[0] else 0
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    if length is not None and length.isdigit():
        body = body[: int(length)]
    return Reply(status, headers, body)


@dataclass
class Server(BaseServer):
    """tests/server.py's gunicorn, set for these tests: a rate limit they never reach,
    bundle checks every 0.2 s, the access log on, and the worker class under test."""

    worker_class: str = "sync"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.env = {
            "NEWS_ADMIN_TOKEN": ADMIN_TOKEN,
            "NEWS_COMMENT_RATE_LIMIT": "1000000/60",
            "NEWS_BUNDLE_CHECK_INTERVAL": "0.2",
            "NEWS_ACCESS_LOG": "-",  # the token-never-logged test greps it too
            "NEWS_WORKER_CLASS": self.worker_class,
            **self.env,
        }

    def raw(self, data: bytes, timeout: float = 10.0, shut_write: bool = False) -> bytes:
        """Send bytes as they are and read until the server closes the connection."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(data)
            if shut_write:
                sock.shutdown(socket.SHUT_WR)
            chunks = []
            with contextlib.suppress(TimeoutError, ConnectionResetError):
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
            return b"".join(chunks)

    def post_comment(self, language: str, article_id: str, content: str, **headers: str) -> Reply:
        from urllib.parse import quote

        body = orjson.dumps({"author": "tester", "content": content})
        return self.request(
            "POST",
            f"/api/v1/{language}/articles/{quote(article_id, safe='')}/comments",
            body,
            {"Content-Type": "application/json", **headers},
        )

    def connections(self) -> int:
        """Server-side TCP connections on the server's port, any state but LISTEN."""
        return tcp_connections(self.port)


# -- /proc readings ------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def tcp_connections(port: int) -> int:
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as fh:
            next(fh)
            for line in fh:
                parts = line.split()
                local_port = int(parts[1].rsplit(":", 1)[1], 16)
                # 0A is LISTEN; TIME_WAIT (06) is the kernel's, not a leak of the server's.
                if local_port == port and parts[3] not in ("0A", "06"):
                    count += 1
    return count


class TcpProxy:
    """A loopback TCP relay the tests can cut and restore: a database "outage" without
    touching the shared database server itself."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        for _ in range(3):  # the free port may be taken by another process meanwhile
            try:
                listener.bind(("127.0.0.1", self.port))
                break
            except OSError:
                self.port = free_port()
        else:
            listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def cut(self) -> None:
        """Refuse new connections and sever every open one, as a stopped server would."""
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if predicate():
                return True
        time.sleep(interval)
    return False
