"""The app under a real server, as production runs it: gunicorn with app/gunicorn_conf.py
(worker class, threads, bind and workers from its environment variables), or granian with
the options of `make serve SERVER=granian`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.paths import ROOT, VENV_BIN
from harness.processes import free_port, start, wait_ready

WORKERS = 2
APP = "app.wsgi:app"
# granian's options as `make serve SERVER=granian` passes them (deploy/granian/options, which
# the Makefile reads); every tree served, an older revision's too, runs with this tree's.
GRANIAN_OPTS = tuple((ROOT / "deploy" / "granian" / "options").read_text().split())


def server_command(server: str, port: int, target: str = APP, workers: int = WORKERS) -> list[str]:
    """`server` is "granian" or a name starting with "gunicorn" (the variants differ only in
    the environment: see `environment`)."""
    if server.startswith("gunicorn"):
        return [str(VENV_BIN / "gunicorn"), "-c", "app/gunicorn_conf.py", target]
    return [
        str(VENV_BIN / "granian"),
        *GRANIAN_OPTS,
        "--workers",
        str(workers),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-access-log",
        target,
    ]


def environment(
    bundle: Path,
    port: int,
    comments: Path,
    *,
    code: Path | None = None,
    worker_class: str = "sync",
    threads: int = 4,
    workers: int = WORKERS,
) -> dict[str, str]:
    """The server's environment: `bundle` served on 127.0.0.1:`port`, comments in the SQLite
    file `comments`; with `code`, that source tree's `app` package is the one imported."""
    env = dict(os.environ)
    # Each gunicorn master makes a metrics directory of its own (app/gunicorn_conf.py); one
    # inherited from the caller would be shared by every server started.
    for name in ("PROMETHEUS_MULTIPROC_DIR", "NEWS_OWN_METRICS_DIR"):
        env.pop(name, None)
    env.update(
        NEWS_BUNDLE_DIR=str(bundle),
        NEWS_COMMENTS_DSN=f"sqlite:///{comments}",
        NEWS_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY=str(workers),
        NEWS_WORKER_CLASS=worker_class,
        NEWS_THREADS=str(threads),
        NEWS_LOG_LEVEL="warning",
    )
    if code is not None:
        # The script's own directory is first on sys.path, not the code's root, and the
        # venv's editable install would otherwise import this checkout's app.
        env["PYTHONPATH"] = str(code)
    return env


def serve(
    code: Path,
    bundle: Path,
    scratch: Path,
    server: str = "gunicorn",
    target: str = APP,
    extra_path: Path | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """`code` serving `bundle` under `server` with 2 workers, ready (/ready answers 200).
    `target` may name an app of `extra_path` (a directory put on PYTHONPATH after `code`)."""
    port = free_port()
    env = environment(bundle, port, scratch / f"comments-{port}.sqlite3", code=code)
    if extra_path is not None:
        env["PYTHONPATH"] += os.pathsep + str(extra_path)
    log = scratch / f"{port}.log"
    # From the code's own directory: gunicorn puts its working directory first on sys.path.
    proc = start(server_command(server, port, target), env, log, cwd=code)
    try:
        wait_ready(port, proc, "/ready")
    except RuntimeError as exc:  # say why: the server's own last words
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{exc} ({code}):\n{tail}") from None
    return proc, port
