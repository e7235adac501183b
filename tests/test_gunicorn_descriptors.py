"""A sync worker keeps serving when its master holds more than 1024 descriptors.

A bundle maps one file per object and Python's mmap keeps a descriptor for each: 1,397 at
9 x 100,000 articles, opened by the master before it forks (preload_app). gunicorn's sync
worker waits with select(2), which refuses descriptors numbered 1024 or above, so every
worker but the first died as it started and was forked again, over and over.
app.gunicorn_worker.JsonErrorSync waits with poll(2) (docs/operations.md, "Open files").
These tests run real gunicorn masters whose preloaded app holds 1,100 open files.
"""

from __future__ import annotations

import http.client
import os
import resource
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.http_support import free_port

REPO = Path(__file__).resolve().parent.parent
HELD = 1100  # descriptors the preloaded app holds: past select(2)'s 1024

APP = f"""
from app.bundle.store import raise_open_file_limit

raise_open_file_limit()
_held = [open("/dev/null", "rb") for _ in range({HELD})]  # as a bundle's mappings are


def app(environ, start_response):
    import os

    start_response("200 OK", [("Content-Type", "text/plain")])
    return [str(os.getpid()).encode()]
"""


def _children(pid: int) -> set[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def _pipes_at_or_above(pid: int, number: int) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    return any(
        int(fd.name) >= number and os.readlink(fd).startswith("pipe:")
        for fd in fds.iterdir()
        if fd.name.isdigit()
    )


def _serve(tmp_path: Path, worker_class: str) -> tuple[set[int], set[int], str, bool]:
    """Start gunicorn with two workers over the app above; after the workers had time to
    start: (workers at 2 s, workers at 5 s, the log, whether a worker's pipe is numbered
    past 1024), and one request must have been answered by a worker."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < HELD + 200:
        pytest.skip(f"the hard open-file limit ({hard}) is below {HELD + 200}")
    (tmp_path / "held_app.py").write_text(textwrap.dedent(APP))
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--preload",
        "--workers",
        "2",
        "--worker-class",
        worker_class,
        "--bind",
        f"127.0.0.1:{port}",
        "--error-logfile",
        str(log),
        "held_app:app",
    ]
    master = subprocess.Popen(command, cwd=tmp_path, env=env)
    try:
        answered = False
        deadline = time.monotonic() + 30
        while not answered and time.monotonic() < deadline:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/")
                answered = conn.getresponse().status == 200
                conn.close()
            except OSError:
                time.sleep(0.1)
        assert answered, log.read_text()
        time.sleep(2)
        early = _children(master.pid)
        high_pipe = any(_pipes_at_or_above(pid, 1024) for pid in early)
        time.sleep(3)
        late = _children(master.pid)
        return early, late, log.read_text(), high_pipe
    finally:
        master.terminate()
        master.wait(timeout=30)


def test_the_sync_worker_keeps_its_workers_past_1024_descriptors(tmp_path: Path) -> None:
    early, late, log, high_pipe = _serve(tmp_path, "app.gunicorn_worker.JsonErrorSync")
    assert high_pipe, "no worker's pipe is numbered past 1024: the test does not test"
    assert "out of range" not in log and "exited with code" not in log, log
    assert len(early) == 2 and early == late, (early, late, log)


def test_gunicorns_own_sync_worker_dies_past_1024_descriptors(tmp_path: Path) -> None:
    # The problem JsonErrorSync.wait exists for; if gunicorn changes this, the method can go.
    _, _, log, _ = _serve(tmp_path, "sync")
    assert "filedescriptor out of range in select()" in log
