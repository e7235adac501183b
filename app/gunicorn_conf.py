"""gunicorn settings for `gunicorn -c app/gunicorn_conf.py app.wsgi:app`.

Environment: NEWS_BIND (default 127.0.0.1:8000), WEB_CONCURRENCY (workers, default 2),
NEWS_WORKER_CLASS (sync or gthread, default sync), NEWS_THREADS (gthread threads per
worker, default 4), NEWS_ACCESS_LOG (a path or "-" for stderr; unset = no access log),
NEWS_CONTROL_SOCKET (path of gunicorn's control socket; unset = none).
"""

import os

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
