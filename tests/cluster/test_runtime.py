"""cluster/runtime.py without processes: layout, state, the rendered nginx configuration."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from cluster.runtime import (
    Cluster,
    ClusterError,
    Instance,
    bundle_id_of,
    process_name_has,
    stop_process,
)
from tests.cluster.conftest import require


def test_layout_gives_each_instance_its_own_socket_and_directories(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, instances=4)
    members = cluster.layout()
    assert [m.bind for m in members] == [
        f"unix:{cluster.socket_dir}/i{n}.sock" for n in range(1, 5)
    ]
    dirs = {m.bundle_dir for m in members} | {m.metrics_dir for m in members}
    assert len(dirs) == 8 and all(tmp_path in d.parents for d in dirs)
    tcp = Cluster(tmp_path, instances=4, first_instance_port=9001, unix_sockets=False).layout()
    assert [m.bind for m in tcp] == [f"127.0.0.1:{p}" for p in (9001, 9002, 9003, 9004)]
    chosen = Cluster(tmp_path, instance_ports=[7005, 7001], unix_sockets=False).layout()
    assert [(m.name, m.port) for m in chosen] == [("i1", 7005), ("i2", 7001)]


def test_state_round_trips(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, port=18080, dsn="postgresql://u@h/db")
    cluster.members = cluster.layout()
    cluster.members[0].pid = 4242
    cluster.nginx_pid = 77
    cluster.save()
    loaded = Cluster.load(tmp_path)
    assert (loaded.port, loaded.dsn, loaded.nginx_pid) == (18080, "postgresql://u@h/db", 77)
    assert loaded.members == cluster.members and loaded.unix_sockets


def test_instance_settings(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, env={"NEWS_COMMENT_RATE_LIMIT": "3/60"})
    member = Instance("i1", 9100, tmp_path / "i1", socket="/run/news/i1.sock")
    env = cluster.instance_env(member)
    # The proxy alone: the peer on a socket only nginx can open.
    assert env["NEWS_BIND"] == "unix:/run/news/i1.sock"
    assert env["NEWS_TRUSTED_PROXIES"] == "unix"
    assert env["NEWS_BUNDLE_DIR"] == str(member.bundle_dir)
    tcp = cluster.instance_env(Instance("i1", 9100, tmp_path / "i1"))
    assert (tcp["NEWS_BIND"], tcp["NEWS_TRUSTED_PROXIES"]) == ("127.0.0.1:9100", "127.0.0.1")
    assert env["PROMETHEUS_MULTIPROC_DIR"] == str(member.metrics_dir)
    assert env["NEWS_COMMENT_RATE_LIMIT"] == "3/60"
    assert "application_name=news-i1" in env["NEWS_COMMENTS_DSN"]


def test_rendered_nginx_config(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, port=18080)
    cluster.members = cluster.layout()
    text = cluster.render_nginx()
    assert not re.search(r"@[A-Z]+@", text)  # every placeholder filled
    assert "listen 127.0.0.1:18080" in text
    for member in cluster.members:
        assert f"server unix:{member.socket} max_fails=3 fail_timeout=5s;" in text
    # Retries only for idempotent requests: nginx's default unless `non_idempotent` is said.
    directives = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    retry = [d for d in directives if d.startswith("proxy_next_upstream ")]
    assert len(retry) == 1 and "non_idempotent" not in retry[0]


def test_rendered_nginx_config_is_accepted_by_nginx(tmp_path: Path) -> None:
    require(shutil.which("nginx") is not None, "nginx is not installed (apt-get install nginx)")
    cluster = Cluster(tmp_path, port=18080)
    cluster.members = cluster.layout()
    conf = tmp_path / "nginx" / "nginx.conf"
    (tmp_path / "nginx" / "tmp").mkdir(parents=True)
    conf.write_text(cluster.render_nginx())
    check = subprocess.run(
        ["nginx", "-t", "-p", str(conf.parent), "-c", str(conf), "-e", str(conf.parent / "e")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr


def test_bundle_id_from_builder_output_or_manifest(tmp_path: Path) -> None:
    done = subprocess.CompletedProcess([], 0, "built bundle abc123 in out (0.1 s)\n", "")
    assert bundle_id_of(done, tmp_path) == "abc123"
    (tmp_path / "manifest.json").write_text('{"bundle_id": "fromfile"}')
    assert bundle_id_of(subprocess.CompletedProcess([], 0, "", ""), tmp_path) == "fromfile"
    with pytest.raises(ClusterError, match="no built bundle"):
        bundle_id_of(None, tmp_path / "missing")


def test_stop_signals_only_the_recorded_program() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    deadline = time.monotonic() + 5
    while not process_name_has(sleeper.pid, b"sleep") and time.monotonic() < deadline:
        time.sleep(0.01)  # /proc shows an empty command line while exec is under way
    try:
        stop_process(sleeper.pid, b"gunicorn", 15, group=False)  # a reused pid: left alone
        assert sleeper.poll() is None
        stop_process(sleeper.pid, b"sleep", 15, group=False)
        assert sleeper.wait(5) == -15
    finally:
        sleeper.kill()
