"""The benchmark harness: what every script in bench/ shares, one module per concept.

- paths: where the benchmarks live and write; commands as the docs show them; the log line;
- processes: free ports, starting, readiness, stopping; CPU time and memory from /proc;
- servers: the app under gunicorn (production config) or granian (deploy/granian/options);
- load: wrk runs over URL lists, and the medians of alternated rounds;
- nginx: the static-file yardstick (one configuration) and pre-rendering its files;
- corpora: the generated corpus, its URL lists, bundles built from it;
- trees: another revision checked out beside this one;
- in_process: the app's CPU per request without a server (bench/profile_app.py);
- cli: the options the scripts share; machine: what a result was measured on.

Scripts put bench/ on sys.path and `import harness`.
"""

from harness import cli
from harness.corpora import (
    ENDPOINTS,
    SCRIPT_FAMILIES,
    all_urls,
    build,
    build_bundle,
    cached_bundle,
    corpus,
    generated,
    script_family,
    sources,
    url_files,
)
from harness.in_process import app_cpu
from harness.load import LUA, WRK, medians, wrk
from harness.machine import machine
from harness.nginx import NGINX, prerender, save, serve_static, static_file
from harness.paths import BENCH, CACHE, RESULTS, ROOT, VENV_BIN, log, shown
from harness.processes import (
    cpu_seconds,
    descendants,
    free_port,
    memory,
    start,
    stop,
    wait_ready,
    workers_of,
)
from harness.servers import APP, GRANIAN_OPTS, WORKERS, environment, serve, server_command
from harness.trees import checkout

__all__ = [
    "APP",
    "BENCH",
    "CACHE",
    "ENDPOINTS",
    "GRANIAN_OPTS",
    "LUA",
    "NGINX",
    "RESULTS",
    "ROOT",
    "SCRIPT_FAMILIES",
    "VENV_BIN",
    "WORKERS",
    "WRK",
    "all_urls",
    "app_cpu",
    "build",
    "build_bundle",
    "cached_bundle",
    "checkout",
    "cli",
    "corpus",
    "cpu_seconds",
    "descendants",
    "environment",
    "free_port",
    "generated",
    "log",
    "machine",
    "medians",
    "memory",
    "prerender",
    "save",
    "script_family",
    "serve",
    "serve_static",
    "server_command",
    "shown",
    "sources",
    "start",
    "static_file",
    "stop",
    "url_files",
    "wait_ready",
    "workers_of",
    "wrk",
]
