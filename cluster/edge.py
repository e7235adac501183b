"""The edge: Varnish (Debian's varnishd, with varnish-modules' xkey) in front of nginx, as a
CDN stands in front of the cluster (docs/api.md §10, docs/operations.md "The edge").

It caches what Cache-Control allows, one object per Accept-Encoding variant, revalidates with
ETag, serves stale objects within stale-while-revalidate while the service answers and within
stale-if-error when it does not, and says `X-Cache: HIT|MISS`. The configuration is
deploy/varnish/edge.vcl; `purge` removes every object carrying any of the given surrogate
keys (xkey), which `Cluster.publish` does once every instance serves the new bundle.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VCL_TEMPLATE = Path(__file__).resolve().parent.parent / "deploy" / "varnish" / "edge.vcl"
VARNISHD = "/usr/sbin/varnishd"
STORAGE = "malloc,256m"  # the edge's memory: objects beyond it are evicted, least recent first
PURGE_BATCH = 200  # keys per PURGE request (a header line stays well under 8 KB)


class EdgeError(RuntimeError):
    """The edge could not start or purge; the message says why."""


@dataclass
class Edge:
    workdir: Path  # varnishd's -n directory (shared memory log, compiled VCL)
    port: int
    nginx_port: int
    stale_while_revalidate: int = 60  # the service's NEWS_CACHE_STALE_WHILE_REVALIDATE

    @property
    def vcl_path(self) -> Path:
        return self.workdir.parent / "edge.vcl"

    @property
    def pid_path(self) -> Path:
        return self.workdir.parent / "varnishd.pid"

    def render(self) -> str:
        text = VCL_TEMPLATE.read_text()
        for key, value in {
            "@NGINX_PORT@": str(self.nginx_port),
            "@STALE_WHILE_REVALIDATE@": str(self.stale_while_revalidate),
        }.items():
            text = text.replace(key, value)
        return text

    def start(self) -> int:
        """Start varnishd in the background; return its manager's pid."""
        if shutil.which(VARNISHD) is None:
            raise EdgeError(f"{VARNISHD} not found: apt-get install varnish varnish-modules")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.vcl_path.write_text(self.render())
        self.pid_path.unlink(missing_ok=True)
        command = [
            VARNISHD,
            *("-n", str(self.workdir), "-a", f"127.0.0.1:{self.port}"),
            *("-f", str(self.vcl_path), "-s", STORAGE, "-P", str(self.pid_path)),
            *("-T", "none"),  # no management port: purges go over HTTP, from loopback
            *("-j", "none"),  # run as the caller: a rehearsal, not a system service
            *("-p", "http_gzip_support=off"),  # the service chooses codings, not the edge
        ]
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not self.pid_path.exists():
            raise EdgeError(f"varnishd did not start: {(result.stderr or result.stdout).strip()}")
        return int(self.pid_path.read_text().strip())

    def purge(self, keys: list[str]) -> int:
        """Remove every cached object carrying any of `keys`; the number removed."""
        gone = 0
        for start in range(0, len(keys), PURGE_BATCH):
            batch = " ".join(keys[start : start + PURGE_BATCH])
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                conn.request("PURGE", "/", headers={"xkey-purge": batch})
                resp = conn.getresponse()
                text = resp.read().decode("utf-8", "replace").strip()
            except OSError as exc:
                raise EdgeError(f"purge on 127.0.0.1:{self.port} failed: {exc}") from None
            finally:
                conn.close()
            if resp.status != 200 or not text.startswith("Purged "):
                raise EdgeError(f"purge refused: {resp.status} {text}")
            gone += int(text.removeprefix("Purged "))
        return gone
