"""A real gunicorn serving a real bundle, for the reliability tests and runners.

No pytest here: `scripts/fuzz.py` and `scripts/soak.py` use it too. Every process is
started in its own session and is stopped by its own id; nothing else is signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.http_support import Response, exchange, free_port

REPO = Path(__file__).resolve().parents[2]
SAMPLE_SRC = REPO / "data" / "sample"
BIN = Path(sys.executable).parent
GUNICORN = BIN / "gunicorn"
CONF = REPO / "app" / "gunicorn_conf.py"
ADMIN_TOKEN = "rel-admin-7c1f9e2b5d"  # distinctive, so a grep of the logs cannot miss it
START_TIMEOUT = 20.0


def build_sample_bundle(out: Path) -> str:
    """The sample corpus, built by the real builder; returns the bundle id."""
    from app.build.cli import build

    return build(SAMPLE_SRC, out)


def sample_article_ids(bundle_dir: Path, language: str = "en") -> list[str]:
    from app.bundle.reader import Bundle

    data = Bundle.load(bundle_dir).languages[language]
    return [orjson.loads(data.article(i).tobytes())["id"] for i in range(data.count)]


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
class Server:
    """gunicorn -c app/gunicorn_conf.py app.wsgi:app on a free loopback port."""

    workdir: Path
    bundle_dir: Path
    dsn: str | None = None
    workers: int = 2
    worker_class: str = "sync"
    env: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / f"gunicorn-{self.port}.log"
        if self.dsn is None:
            self.dsn = f"sqlite:///{self.workdir / 'comments.sqlite3'}"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> Server:
        env = {
            **os.environ,
            "NEWS_BIND": f"127.0.0.1:{self.port}",
            "NEWS_BUNDLE_DIR": str(self.bundle_dir),
            "NEWS_COMMENTS_DSN": str(self.dsn),
            "NEWS_ADMIN_TOKEN": ADMIN_TOKEN,
            "NEWS_COMMENT_RATE_LIMIT": "1000000/60",
            "NEWS_BUNDLE_CHECK_INTERVAL": "0.2",
            "NEWS_ACCESS_LOG": "-",  # the token-never-logged test greps it too
            "WEB_CONCURRENCY": str(self.workers),
            "NEWS_WORKER_CLASS": self.worker_class,
            "PYTHONUNBUFFERED": "1",
            **self.env,
        }
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child from here on
        try:
            self.process = subprocess.Popen(
                [str(GUNICORN), "-c", str(CONF), "app.wsgi:app"],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited at start:\n{self.log_text()[-3000:]}")
            with contextlib.suppress(OSError):
                if self.request("GET", "/health", timeout=1).status == 200 and (
                    len(self.worker_pids()) == self.workers
                ):
                    return self
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"gunicorn did not start:\n{self.log_text()[-3000:]}")

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- talking to it ----------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
    ) -> Reply:
        return exchange(self.port, method, path, body, headers, timeout)

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

    # -- observing it -----------------------------------------------------------------

    def worker_pids(self) -> list[int]:
        return children(self.pid)

    def log_text(self) -> str:
        return self.log_path.read_text("utf-8", "replace") if self.log_path.exists() else ""

    def connections(self) -> int:
        """Server-side TCP connections on the server's port, any state but LISTEN."""
        return tcp_connections(self.port)

    # -- stopping it ------------------------------------------------------------------

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 35.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            workers = self.worker_pids()
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            for pid in workers:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.wait(10)


# -- /proc readings ------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields follow the last ")".
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 1 and int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return sorted(found)


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


@contextlib.contextmanager
def running(server: Server) -> Iterator[Server]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


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
