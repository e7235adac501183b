"""gunicorn settings for `gunicorn -c app/gunicorn_conf.py app.wsgi:app`.

Environment: NEWS_BIND (default 127.0.0.1:8000), WEB_CONCURRENCY (workers, default 2),
NEWS_WORKER_CLASS (sync or gthread, default sync), NEWS_THREADS (gthread threads per
worker, default 4), NEWS_ACCESS_LOG (a path or "-" for stderr; unset = no access log),
NEWS_CONTROL_SOCKET (path of gunicorn's control socket; unset = none).
"""

import os
from typing import Any

bind = os.environ.get("NEWS_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
_worker = os.environ.get("NEWS_WORKER_CLASS", "sync")
# gunicorn silently turns `sync` into `gthread` when threads > 1, so set threads only there.
threads = int(os.environ.get("NEWS_THREADS", "4")) if _worker == "gthread" else 1
# The same workers, except that the errors gunicorn answers itself (malformed request,
# URI or headers too long) are JSON with `detail` and nosniff, as the contract requires
# (app/gunicorn_worker.py). Any other value is passed to gunicorn unchanged.
worker_class = {
    "sync": "app.gunicorn_worker.JsonErrorSync",
    "gthread": "app.gunicorn_worker.JsonErrorThread",
}.get(_worker, _worker)
# Load the app (and map the bundle) once in the master: workers fork with it ready, start
# fast, and share the interpreter's pages copy-on-write. Comment-store connections are
# opened lazily in each worker, never before the fork.
preload_app = True
accesslog = os.environ.get("NEWS_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("NEWS_LOG_LEVEL", "info")
timeout = 30
graceful_timeout = 30
keepalive = 5
# Requests are small GETs and JSON bodies of at most 64 KiB; refuse oversized heads early.
# gunicorn 27's control socket defaults to one path per user, which several instances on a
# host would fight over; it is opt-in here (NEWS_CONTROL_SOCKET=/run/news/gunicorn.ctl).
control_socket_disable = not os.environ.get("NEWS_CONTROL_SOCKET")
if os.environ.get("NEWS_CONTROL_SOCKET"):
    control_socket = os.environ["NEWS_CONTROL_SOCKET"]
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190

# -- Access log and metrics (docs/operations.md) -------------------------------------------
# Access log lines are JSON objects (app/access_log.py).
logger_class = "app.access_log.JsonAccessLogger"

# prometheus_client's multiprocess mode: each worker writes its values to files in this
# directory and /metrics adds them up. It must be set before the app (and so
# prometheus_client) is imported, which preload_app does right after this file is read, and
# must start empty: files left by an earlier run would be counted again. Unset, a private
# directory is made and removed at exit.
_metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
# A reload (SIGHUP) reads this file again: the private directory is still ours then.
_own_metrics_dir = not _metrics_dir or _metrics_dir == os.environ.get("NEWS_OWN_METRICS_DIR")
if not _metrics_dir:
    import tempfile

    _metrics_dir = tempfile.mkdtemp(prefix="news-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.environ["NEWS_OWN_METRICS_DIR"] = _metrics_dir
else:
    import glob

    os.makedirs(_metrics_dir, exist_ok=True)
    for _stale in glob.glob(os.path.join(_metrics_dir, "*.db")):
        os.unlink(_stale)


def child_exit(server: Any, worker: Any) -> None:  # gunicorn's Arbiter and Worker
    # A dead worker's gauges stop counting; its counters and histograms stay in the sums.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    if _own_metrics_dir:
        import shutil

        shutil.rmtree(_metrics_dir, ignore_errors=True)
