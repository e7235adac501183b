"""nginx serving pre-rendered responses as static files: the yardstick of the benchmarks.

A URL's body is saved at `static_file(root, url)`; nginx finds it with try_files
"/$uri/_$args" ($uri is percent-decoded, $args raw). One configuration for every benchmark;
each names what its `location /` adds (a header, gzip_static) and its readiness path.
"""

from __future__ import annotations

import http.client
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from harness.paths import shown
from harness.processes import free_port, start, wait_ready

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
WORKERS = 2

CONF = """\
{user}worker_processes {workers};
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    types {{ }}
    default_type application/json;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 65;
    keepalive_requests 1000000;
    open_file_cache max=20000 inactive=120s;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location = {ready} {{ return 200 '{ready_body}'; }}
        location / {{
{location}            try_files "/$uri/_$args" =404;
        }}
    }}
}}
"""
READY_BODIES = {"/health": '{"status":"ok"}', "/ready": '{"status":"ready"}'}


def static_file(root: Path, url: str) -> Path:
    """Where nginx looks for `url`'s body under `root` (CONF's try_files)."""
    path, _, query = url.partition("?")
    return root / unquote(path).lstrip("/") / f"_{query}"


def save(root: Path, url: str, body: bytes) -> Path:
    target = static_file(root, url)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(body)
    return target


def prerender(port: int, urls: list[str], root: Path | None) -> dict[str, Any]:
    """Fetches every URL once from the app on `port`: checks each answers 200 and, with
    `root`, saves the bodies there, so nginx serves byte-for-byte the app's responses."""
    statuses: Counter[int] = Counter()
    bad: list[str] = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for url in urls:
        conn.request("GET", url)
        resp = conn.getresponse()
        body = resp.read()
        statuses[resp.status] += 1
        if resp.status != 200 and len(bad) < 10:
            bad.append(f"{resp.status} {url} {body[:120]!r}")
        if root is not None:
            save(root, url, body)
        if resp.getheader("connection", "").lower() == "close":
            conn.close()
    return {
        "urls": len(urls),
        "status": {str(k): v for k, v in sorted(statuses.items())},
        "bad": bad,
    }


def serve_static(
    root: Path, scratch: Path, location: tuple[str, ...] = (), ready: str = "/health"
) -> tuple[subprocess.Popen[bytes], int, str]:
    """nginx (2 workers) serving `root`, ready; `location` lists directives added to
    `location /`. Returns the process, its port and its command as the docs show it."""
    tmp = scratch / "nginx"
    tmp.mkdir()
    port = free_port()
    # As root, nginx would switch its workers to "nobody", who cannot read our private temp
    # dir; as another user the directive is ignored, so it is set only for root.
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(
        CONF.format(
            user=user,
            workers=WORKERS,
            tmp=tmp,
            port=port,
            root=root,
            ready=ready,
            ready_body=READY_BODIES[ready],
            location="".join(f"            {directive};\n" for directive in location),
        )
    )
    cmd = [NGINX, "-p", str(tmp), "-e", str(tmp / "error.log"), "-c", str(conf)]
    proc = start(cmd, dict(os.environ), tmp / "stdout.log")
    wait_ready(port, proc, ready)
    return proc, port, shown(cmd).replace(str(tmp), "$TMP") + "  # conf: bench/harness/nginx.py"
