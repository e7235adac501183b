"""A real gunicorn or granian serving app.wsgi:app on a free loopback port.

The one way tests (directly or through tests/reliability/harness.py) start a server; no
pytest imports here. Every server runs in a session of its
own and is stopped by its own id; nothing else is signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from json import dumps as json_dumps
from pathlib import Path
from typing import Any, Literal, Self

from tests.http_support import Response, exchange, free_port

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CONF = REPO / "app" / "gunicorn_conf.py"
# granian's options as `make serve SERVER=granian` passes them (the Makefile's GRANIAN_OPTS).
GRANIAN_OPTS = tuple((REPO / "deploy" / "granian" / "options").read_text().split())
START_TIMEOUT = 20.0

Kind = Literal["gunicorn", "granian"]


def command(kind: Kind, port: int, workers: int) -> list[str]:
    if kind == "granian":
        # granian takes its address and worker count as flags: NEWS_BIND and
        # WEB_CONCURRENCY are gunicorn_conf.py's.
        return [
            str(BIN / "granian"), *GRANIAN_OPTS, "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers), "app.wsgi:app",
        ]  # fmt: skip
    return [str(BIN / "gunicorn"), "-c", str(CONF), "app.wsgi:app"]


class PortTaken(Exception):
    """Another process bound the server's port first."""


@dataclass
class Server:
    workdir: Path  # holds the log and, when no dsn is given, the SQLite comment store
    bundle_dir: Path
    dsn: str | None = None
    kind: Kind = "gunicorn"
    workers: int = 2
    env: Mapping[str, str] = field(default_factory=dict)  # more NEWS_* settings; these win
    port: int = field(default_factory=free_port)
    request_timeout: float = 10.0  # seconds before a request counts as failed
    process: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.dsn is None:
            self.dsn = f"sqlite:///{self.workdir / 'comments.sqlite3'}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.kind}-{self.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    # -- starting it ------------------------------------------------------------------

    def launch(self) -> Self:
        """Start the process without waiting for it: for start-ups that must fail."""
        env = {
            **os.environ,
            "NEWS_BIND": f"127.0.0.1:{self.port}",
            "NEWS_BUNDLE_DIR": str(self.bundle_dir),
            "NEWS_COMMENTS_DSN": str(self.dsn),
            "WEB_CONCURRENCY": str(self.workers),
            "PYTHONUNBUFFERED": "1",  # the log is complete whenever a test reads it
            **self.env,
        }
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child from here on
        try:
            self.process = subprocess.Popen(
                command(self.kind, self.port, self.workers),
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Its own process group: kill() reaches the workers and nothing else.
                start_new_session=True,
            )
        finally:
            log.close()
        return self

    def start(self, ready_path: str = "/health") -> Self:
        """Launch, then wait until `ready_path` answers 200 and every worker is up, so the
        first request or signal of a test meets the whole server. Fails with the log.

        The free port was free when picked; on a machine others share, another process can
        take it before the server binds. Then the server is started again on a new port."""
        for _ in range(3):
            try:
                return self._start(ready_path)
            except PortTaken:
                self.port = free_port()
        return self._start(ready_path)

    def _start(self, ready_path: str) -> Self:
        process = self.launch().process
        assert process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log = self.log_text()
                if "Address already in use" in log[-3000:]:
                    raise PortTaken(self.port)
                raise RuntimeError(f"{self.kind} exited at start:\n{log[-3000:]}")
            with contextlib.suppress(OSError):
                if self.request("GET", ready_path, timeout=1).status == 200 and (
                    len(self.worker_pids()) == self.workers
                ):
                    return self
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"{self.kind} did not start:\n{self.log_text()[-3000:]}")

    def __enter__(self) -> Self:
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
        timeout: float | None = None,
        *,
        json: Any = None,
    ) -> Response:
        """One exchange on a fresh connection; `json`, when given, is the body, encoded."""
        if json is not None:
            body = json_dumps(json).encode()
            headers = {"Content-Type": "application/json", **(headers or {})}
        if timeout is None:
            timeout = self.request_timeout
        return exchange(self.port, method, path, body, headers, timeout)

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> Response:
        return self.request("GET", path, headers=headers)

    # -- observing it -----------------------------------------------------------------

    def worker_pids(self) -> list[int]:
        return children(self.pid)

    def log_text(self) -> str:
        return self.log_path.read_text("utf-8", "replace") if self.log_path.exists() else ""

    # -- signalling and stopping it ---------------------------------------------------

    def send_signal(self, sig: int) -> None:
        """To the master only, as an operator's `kill -SIG <pid>` would."""
        os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 35.0) -> int | None:
        """Signal the master and wait for its exit status; None (and killed) if it hangs."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        with contextlib.suppress(ProcessLookupError):
            self.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        """SIGKILL to the master and its workers at once (its own process group)."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.process.wait(10)


def children(pid: int) -> list[int]:
    """Live child processes of pid, from /proc."""
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
