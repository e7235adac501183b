"""The image (Dockerfile), built and run with podman as Kubernetes runs it
(deploy/kubernetes/deployment.yaml): the init container installs the bundle from the
origin volume, then the server serves it as user 10001 on a read-only root file system.

No image registry is reachable in CI, so the Dockerfile's bases are made from Debian
packages (deploy/image/debian_bases.sh: debootstrap, `podman import`) and passed as its
build arguments. Needs root, podman, runc and debootstrap (.ci/run installs them).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from app.builder.builder import build
from tests.http_support import exchange, free_port
from tests.server import REPO

pytestmark = pytest.mark.e2e

BASES = REPO / "deploy" / "image" / "debian_bases.sh"
UID = 10001


def _podman() -> list[str]:
    missing = [tool for tool in ("podman", "runc", "debootstrap") if not shutil.which(tool)]
    if missing or os.geteuid() != 0:
        message = f"the image test needs root and {', '.join(missing) or 'podman'}"
        if os.environ.get("CI"):
            pytest.fail(f"{message} (CI is set, so this is a failure)")
        pytest.skip(message)
    # runc, not Debian's default crun: crun refuses hosts with cgroup v1 and v2 mounted
    # together ("cgroups in hybrid mode not supported"). Limits no higher than this
    # process's: without CAP_SYS_RESOURCE (as in many CI sandboxes) the runtime cannot
    # raise them to podman's defaults ("setrlimit RLIMIT_NOFILE: Operation not permitted").
    return ["podman", "--runtime", "runc"]


def _limits() -> list[str]:
    # nofile: this process's own limit. nproc: a fixed 4096, plenty for a container (runc
    # refused even this process's own value here: "error setting rlimit type 6").
    nofile, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", "nproc=4096:4096"]


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    podman = _podman()
    python_base, node_base = _run([str(BASES)], timeout=900).stdout.split()
    tag = f"localhost/news-delivery:test-{os.getpid()}"
    _run(
        [
            *podman, "build", "--network", "host", *_limits(),
            "--build-arg", f"PYTHON_IMAGE={python_base}",
            "--build-arg", f"NODE_IMAGE={node_base}",
            "--tag", tag, str(REPO),
        ],
        timeout=900,
    )  # fmt: skip
    try:
        yield tag
    finally:
        subprocess.run(["podman", "rmi", "--force", tag], capture_output=True, check=False)


def test_image_serves_the_origin_bundle_non_root_read_only(image: str, tmp_path: Path) -> None:
    podman = _podman()
    origin, bundles = tmp_path / "origin", tmp_path / "bundles"
    bundle_id = build(REPO / "data" / "sample", origin / "current")
    bundles.mkdir()
    os.chown(bundles, UID, UID)  # the pod's fsGroup does this for its emptyDir
    # As the pod: no capability, no privilege escalation, read-only root, /tmp writable.
    run = [
        *podman, "run", "--network", "host", "--read-only", "--cap-drop", "all",
        "--security-opt", "no-new-privileges", *_limits(),
        "--volume", f"{bundles}:/bundles",
    ]  # fmt: skip

    # The init container: installs the origin's bundle, exits 0.
    init = _run(
        [
            *run, "--rm", "--volume", f"{origin}:/origin:ro", image,
            "python", "scripts/bundle_sync.py", "--origin", "/origin/current",
            "--dest", "/bundles/served", "--once",
        ],
        timeout=120,
    )  # fmt: skip
    assert f"installed bundle {bundle_id}" in init.stdout + init.stderr

    port = free_port()
    name = f"news-image-test-{port}"
    _run(
        [
            *run, "--detach", "--name", name, "--tmpfs", "/tmp:mode=1777",
            "--env", f"NEWS_BIND=0.0.0.0:{port}",
            "--env", "NEWS_COMMENTS_DSN=sqlite:////tmp/comments.sqlite3",
            image,
        ],
        timeout=60,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        ready = None
        while time.monotonic() < deadline:
            try:
                ready = exchange(port, "GET", "/ready", None, None, 2)
            except OSError:
                ready = None
            if ready is not None and ready.status == 200:
                break
            time.sleep(0.5)
        logs = subprocess.run(["podman", "logs", name], capture_output=True, text=True).stderr
        assert ready is not None and ready.status == 200, logs[-3000:]
        assert orjson.loads(ready.body) == {"status": "ready", "bundle": bundle_id}

        article = exchange(port, "GET", "/api/v1/en/articles/latest?limit=1", None, None, 5)
        assert article.status == 200 and orjson.loads(article.body)[0]["language"] == "en"
        metrics = exchange(port, "GET", "/metrics", None, None, 5)
        assert metrics.status == 200
        assert f'news_bundle_info{{bundle="{bundle_id}"}} 1.0' in metrics.body.decode()

        # Non-root, and the root file system refuses writes (the code included).
        whoami = _run([*podman, "exec", name, "id", "-u"], timeout=30).stdout.strip()
        assert whoami == str(UID)
        write = subprocess.run(
            [*podman, "exec", name, "touch", "/srv/news/app/planted.py"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert write.returncode != 0 and "Read-only file system" in write.stderr
        inspect = _run([*podman, "inspect", name], timeout=30).stdout
        assert orjson.loads(inspect)[0]["HostConfig"]["ReadonlyRootfs"] is True
    finally:
        subprocess.run([*podman, "rm", "--force", name], capture_output=True, check=False)
