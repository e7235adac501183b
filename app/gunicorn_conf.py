"""gunicorn settings for `gunicorn -c app/gunicorn_conf.py app.wsgi:app`.

Environment: NEWS_BIND (default 127.0.0.1:8000), WEB_CONCURRENCY (workers, default 2),
NEWS_WORKER_CLASS (sync or gthread, default sync), NEWS_THREADS (gthread threads per
worker, default 4), NEWS_ACCESS_LOG (a path or "-" for stderr; unset = no access log).
"""

import os

bind = os.environ.get("NEWS_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = os.environ.get("NEWS_WORKER_CLASS", "sync")
threads = int(os.environ.get("NEWS_THREADS", "4"))
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
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
