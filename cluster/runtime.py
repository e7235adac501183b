"""The production topology on one machine: nginx in front of N independent instances.

Each instance is its own gunicorn with its own bundle directory, port, log and metrics
directory; all of them share one PostgreSQL database. Everything the cluster writes lives
under one runtime directory (`.cluster/` for `make cluster`), and `state.json` there
records the processes, so `stop` signals exactly those processes and nothing else.

Instances listen on unix sockets in one directory that only the cluster's user can enter
(mode 0700), and nginx's workers run as that user: nothing else on the machine can send an
instance a request, so an instance believes the X-Forwarded-For of its socket peer
(`NEWS_TRUSTED_PROXIES=unix`) and of no one else. `unix_sockets=False` gives TCP ports on
127.0.0.1 instead (bench/cluster_bench.py counts TCP connections per instance).

Bundles reach instances only through the publishing scripts (README, "The bundle
pipeline"): `scripts/build_bundles.py` builds once, `scripts/install_bundle.py` installs
on one instance, and the instance's own `GET /ready` says when it serves the new bundle.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cluster.edge import Edge, EdgeError

REPO = Path(__file__).resolve().parent.parent
NGINX_TEMPLATE = REPO / "deploy" / "nginx" / "nginx.conf"
GUNICORN_CONF = REPO / "app" / "gunicorn_conf.py"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/news_cluster"
START_TIMEOUT = 30.0
PUBLISH_TIMEOUT = 60.0  # per instance: install, then its workers' next bundle check
STOP_TIMEOUT = 35.0  # gunicorn's graceful_timeout (30 s) and a margin
PURGE_SETTLE = 1.0  # seconds between the edge's two purges after a publish
CONFIRMATIONS = 4  # /ready answers in a row naming the new bundle, after the check interval


class ClusterError(RuntimeError):
    """The cluster could not do what was asked; the message says what and where."""


@dataclass
class Instance:
    name: str
    port: int
    root: Path
    pid: int | None = None
    socket: str | None = None  # the unix socket it listens on; None: 127.0.0.1:port

    @property
    def address(self) -> int | str:
        """What `ready` and the tests' clients take: the socket path, else the port."""
        return self.socket if self.socket is not None else self.port

    @property
    def bind(self) -> str:
        """gunicorn's NEWS_BIND, which is also nginx's `server` address."""
        return f"unix:{self.socket}" if self.socket is not None else f"127.0.0.1:{self.port}"

    @property
    def bundle_dir(self) -> Path:
        return self.root / "bundle"

    @property
    def log_path(self) -> Path:
        return self.root / "gunicorn.log"

    @property
    def metrics_dir(self) -> Path:
        return self.root / "metrics"


@dataclass
class Cluster:
    runtime: Path
    instances: int = 3
    port: int = 8080
    first_instance_port: int = 8101
    dsn: str = DEFAULT_DSN
    env: Mapping[str, str] = field(default_factory=dict)  # more settings for every instance
    # A cgroup directory that instances and installs run in (bench/cluster_bench.py reads
    # their memory there); None: the caller's own.
    cgroup: Path | None = None
    instance_ports: list[int] | None = None  # instead of consecutive ports from the first
    unix_sockets: bool = True  # instances on unix sockets (ports unused), else on TCP ports
    python: str = sys.executable
    nginx: str = "nginx"
    members: list[Instance] = field(default_factory=list)
    nginx_pid: int | None = None
    # The edge (cluster/edge.py): Varnish on this port in front of nginx; None: no edge.
    edge_port: int | None = None
    edge_pid: int | None = None

    # -- layout -------------------------------------------------------------------------
    # Where the runtime directory keeps each part (set from `runtime`).
    state_path: Path = field(init=False)
    build_dir: Path = field(init=False)
    nginx_dir: Path = field(init=False)
    nginx_conf: Path = field(init=False)
    socket_dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.state_path = self.runtime / "state.json"
        self.build_dir = self.runtime / "build"
        self.nginx_dir = self.runtime / "nginx"
        self.nginx_conf = self.nginx_dir / "nginx.conf"
        self.socket_dir = self.runtime / "sockets"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def layout(self) -> list[Instance]:
        root = self.runtime / "instances"
        ports = self.instance_ports or [self.first_instance_port + n for n in range(self.instances)]
        return [
            Instance(
                f"i{n}",
                port,
                root / f"i{n}",
                socket=str(self.socket_dir / f"i{n}.sock") if self.unix_sockets else None,
            )
            for n, port in enumerate(ports, 1)
        ]

    def save(self) -> None:
        state = {
            "port": self.port,
            "dsn": self.dsn,
            "nginx_pid": self.nginx_pid,
            "edge_port": self.edge_port,
            "edge_pid": self.edge_pid,
            "members": [{**asdict(m), "root": str(m.root)} for m in self.members],
        }
        self.state_path.write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, runtime: Path) -> Cluster:
        state = json.loads((runtime / "state.json").read_text())
        members = [Instance(**{**m, "root": Path(m["root"])}) for m in state["members"]]
        unix = all(m.socket is not None for m in members)
        return cls(
            runtime,
            instances=len(members),
            port=state["port"],
            dsn=state["dsn"],
            members=members,
            nginx_pid=state["nginx_pid"],
            unix_sockets=unix,
            edge_port=state.get("edge_port"),
            edge_pid=state.get("edge_pid"),
        )

    # -- starting -----------------------------------------------------------------------

    def start(self, src: Path | None) -> None:
        """Build `src` (None: take the runtime's last build), install it on every instance,
        start them and nginx; return once `GET /ready` through nginx answers 200. On
        failure, stops what it started."""
        if self.state_path.exists():
            raise ClusterError(f"a cluster already runs from {self.runtime} (stop it first)")
        self.runtime.mkdir(parents=True, exist_ok=True)
        ensure_database(self.dsn)
        if src is not None:
            self.build(src)
        self.members = self.layout()
        if self.unix_sockets:
            # Only the cluster's user may enter: the sockets are nginx's alone to reach.
            self.socket_dir.mkdir(exist_ok=True)
            self.socket_dir.chmod(0o700)
        try:
            for member in self.members:
                member.root.mkdir(parents=True, exist_ok=True)
                self.install(member)
                self.start_instance(member)
                self.save()
            for member in self.members:
                wait_for(lambda m=member: ready(m.address) is not None, START_TIMEOUT,
                         f"instance {member.name} ready", member.log_path)  # fmt: skip
            self.start_nginx()
            self.save()
            wait_for(lambda: ready(self.port) is not None, START_TIMEOUT,
                     "GET /ready through nginx", self.nginx_dir / "error.log")  # fmt: skip
            self.start_edge()
        except BaseException:
            self.stop()
            raise

    def instance_env(self, member: Instance) -> dict[str, str]:
        return {
            **os.environ,
            "NEWS_BIND": member.bind,
            "NEWS_BUNDLE_DIR": str(member.bundle_dir),
            # Named per instance, so pg_stat_activity shows who holds which connection.
            "NEWS_COMMENTS_DSN": with_application_name(self.dsn, f"news-{member.name}"),
            # The proxy alone: its socket peer (only nginx can open the socket), else the
            # loopback address nginx connects from.
            "NEWS_TRUSTED_PROXIES": self.trusted_proxy(member),
            # gthread keeps nginx's upstream connections alive; sync closes every one.
            "NEWS_WORKER_CLASS": "gthread",
            "NEWS_ACCESS_LOG": str(member.root / "access.log"),
            "PROMETHEUS_MULTIPROC_DIR": str(member.metrics_dir),
            "PYTHONUNBUFFERED": "1",
            **self.env,
        }

    def start_instance(self, member: Instance) -> None:
        gunicorn = str(Path(self.python).parent / "gunicorn")
        with open(member.log_path, "ab") as log:
            process = subprocess.Popen(
                [gunicorn, "-c", str(GUNICORN_CONF), "app.wsgi:app"],
                cwd=REPO,
                env=self.instance_env(member),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stop/kill reach it and its workers
                preexec_fn=self._enter_cgroup if self.cgroup else None,
            )
        member.pid = process.pid

    @staticmethod
    def trusted_proxy(member: Instance) -> str:
        return "unix" if member.socket is not None else "127.0.0.1"

    def render_nginx(self) -> str:
        upstreams = "\n        ".join(
            f"server {m.bind} max_fails=3 fail_timeout=5s;" for m in self.members
        )
        # Started as root, nginx's workers would run as `nobody`, which may not enter the
        # socket directory (or a private temporary directory above it): run them as the
        # cluster's user. Otherwise nginx runs as the caller already and needs no line.
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
        trusted = {self.trusted_proxy(m) for m in self.members} or {"127.0.0.1"}
        text = NGINX_TEMPLATE.read_text()
        for key, value in {
            "@RUNTIME@": str(self.nginx_dir),
            "@LISTEN@": f"127.0.0.1:{self.port}",
            "@UPSTREAMS@": upstreams,
            "@TRUSTED@": ",".join(sorted(trusted)),
            "@USER@": user,
        }.items():
            text = text.replace(key, value)
        return text

    def start_nginx(self) -> None:
        (self.nginx_dir / "tmp").mkdir(parents=True, exist_ok=True)
        self.nginx_conf.write_text(self.render_nginx())
        # nginx's own prefix, config and pid file: never the system service.
        command = [self.nginx, "-p", str(self.nginx_dir), "-c", str(self.nginx_conf)]
        result = subprocess.run(
            [*command, "-e", str(self.nginx_dir / "error.log")],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise ClusterError(f"nginx did not start: {result.stderr.strip()}")
        pid_file = self.nginx_dir / "nginx.pid"
        wait_for(pid_file.exists, 5, "nginx pid file", self.nginx_dir / "error.log")
        self.nginx_pid = int(pid_file.read_text().strip())

    # -- publishing ---------------------------------------------------------------------

    def build(self, src: Path) -> str:
        """Build `src` into the cluster's build directory (incremental when it holds a
        bundle already) and return the bundle id. The surrogate keys the build changed go
        to `purge_keys_path`, for the edge."""
        result = run_script(
            "build_bundles.py", "--src", str(src), "--out", str(self.build_dir),
            "--purge-keys", str(self.purge_keys_path),
        )  # fmt: skip
        return bundle_id_of(result, self.build_dir)

    def install(self, member: Instance) -> None:
        run_script(
            "install_bundle.py",
            str(self.build_dir),
            str(member.bundle_dir),
            preexec=self._enter_cgroup if self.cgroup else None,
        )

    def _enter_cgroup(self) -> None:
        assert self.cgroup is not None
        (self.cgroup / "cgroup.procs").write_text(str(os.getpid()))

    def publish(
        self, src: Path | None, log: Callable[[str], None] = print, timeout: float = PUBLISH_TIMEOUT
    ) -> str:
        """Build `src` once (or take the cluster's last build when None) and roll it out one
        instance at a time: install, then wait until that instance serves the new bundle.
        An instance that refuses it stops the rollout; the rest keep the old one."""
        bundle_id = self.build(src) if src is not None else bundle_id_of(None, self.build_dir)
        log(f"publishing bundle {bundle_id} to {len(self.members)} instance(s)")
        for member in self.members:
            self.install(member)
            self.wait_for_bundle(member, bundle_id, time.monotonic(), timeout)
            log(f"  {member.name} ({member.bind}) serves {bundle_id}")
        if src is not None:
            self.purge_edge(log)
        return bundle_id

    def wait_for_bundle(
        self, member: Instance, bundle_id: str, installed_at: float, timeout: float
    ) -> None:
        """Until every worker of `member` serves `bundle_id`. /ready reaches one worker at a
        time, but each worker checks the disk on its first request after its check interval:
        once that interval has passed since the install and several answers in a row name
        the new bundle, all of them do."""
        interval = float(self.instance_env(member).get("NEWS_BUNDLE_CHECK_INTERVAL") or 1.0)
        deadline = installed_at + timeout
        in_a_row = 0
        while in_a_row < CONFIRMATIONS:
            body = ready(member.address)
            if body is not None and body.get("rejected_bundle"):
                raise ClusterError(
                    f"{member.name} refused bundle {bundle_id}: {body['rejected_bundle']}"
                    "; later instances were not changed"
                )
            settled = time.monotonic() >= installed_at + interval
            new = body is not None and body.get("bundle") == bundle_id
            in_a_row = in_a_row + 1 if new and settled else 0
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{member.name} did not serve {bundle_id} within {timeout:.0f} s"
                    f" (/ready: {body}); see {member.log_path}"
                )
            if in_a_row == 0:
                time.sleep(0.1)

    # -- stopping -----------------------------------------------------------------------

    def stop(self) -> None:
        """The edge and nginx first (no new requests), then each instance's graceful drain."""
        self.stop_edge()
        if self.nginx_pid is not None:
            stop_process(self.nginx_pid, b"nginx", signal.SIGQUIT, group=False)
            self.nginx_pid = None
        for member in self.members:
            if member.pid is not None:
                stop_process(member.pid, b"gunicorn", signal.SIGTERM, group=True)
                member.pid = None
        self.state_path.unlink(missing_ok=True)

    # -- the edge (cluster/edge.py) ------------------------------------------------------

    @property
    def purge_keys_path(self) -> Path:
        return self.runtime / "purge-keys.txt"

    @property
    def edge(self) -> Edge | None:
        if self.edge_port is None:
            return None
        swr = self.env.get("NEWS_CACHE_STALE_WHILE_REVALIDATE") or "60"
        return Edge(self.runtime / "edge" / "varnish", self.edge_port, self.port, int(swr))

    @property
    def edge_url(self) -> str:
        return f"http://127.0.0.1:{self.edge_port}"

    def start_edge(self) -> None:
        """Start the edge in front of nginx (when it has a port) and wait until it answers
        GET /ready: its probe has found nginx healthy."""
        edge = self.edge
        if edge is None:
            return
        try:
            self.edge_pid = edge.start()
        except EdgeError as exc:
            raise ClusterError(str(exc)) from None
        self.save()
        wait_for(lambda: ready(edge.port) is not None, START_TIMEOUT,
                 "GET /ready through the edge", self.nginx_dir / "error.log")  # fmt: skip

    def purge_edge(self, log: Callable[[str], None] = print) -> None:
        """Purge the keys the last build named, every instance serving it. Twice, a second
        apart: a refill that left for an instance just before the rollout ended cannot
        outlive the second purge."""
        edge = self.edge
        if edge is None or self.edge_pid is None:
            return
        keys = self.purge_keys_path.read_text().split() if self.purge_keys_path.exists() else []
        if not keys:
            return
        try:
            gone = edge.purge(keys)
            time.sleep(PURGE_SETTLE)
            gone += edge.purge(keys)
        except EdgeError as exc:
            raise ClusterError(str(exc)) from None
        log(f"edge: purged {len(keys)} surrogate key(s), {gone} object(s)")

    def stop_edge(self) -> None:
        if self.edge_pid is not None:
            stop_process(self.edge_pid, b"varnishd", signal.SIGTERM, group=False)
            self.edge_pid = None


# -- helpers -----------------------------------------------------------------------------


def run_script(
    name: str, *args: str, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / name), *args],
        cwd=REPO,
        preexec_fn=preexec,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise ClusterError(f"{name} failed:\n{result.stderr.strip()}")
    return result


def bundle_id_of(result: subprocess.CompletedProcess[str] | None, out: Path) -> str:
    """The id the builder reports; else the one its output's manifest names."""
    match = result and re.search(r"built bundle (\S+)", result.stdout)
    if match:
        return match.group(1)
    try:
        return str(json.loads((out / "manifest.json").read_text())["bundle_id"])
    except (OSError, ValueError, KeyError) as exc:
        raise ClusterError(f"no built bundle in {out}: {exc}") from None


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP over a unix socket (`path`); the Host header names localhost."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def connection(address: int | str, timeout: float) -> http.client.HTTPConnection:
    """To 127.0.0.1:address (a port), or to the unix socket at address (a path)."""
    if isinstance(address, str):
        return UnixHTTPConnection(address, timeout)
    return http.client.HTTPConnection("127.0.0.1", address, timeout=timeout)


def ready(address: int | str, timeout: float = 2.0) -> dict[str, Any] | None:
    """The body of a 200 from GET /ready on 127.0.0.1:address or the unix socket at
    address, else None."""
    conn = connection(address, timeout)
    try:
        conn.request("GET", "/ready")
        resp = conn.getresponse()
        body = resp.read()
        return json.loads(body) if resp.status == 200 else None
    except (OSError, ValueError):
        return None
    finally:
        conn.close()


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    tail = log.read_text("utf-8", "replace")[-2000:] if log.exists() else ""
    raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}; {log}:\n{tail}")


def process_name_has(pid: int, needle: bytes) -> bool:
    """Whether pid is alive and its command line names `needle` (a reused pid is not)."""
    try:
        return needle in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def stop_process(pid: int, needle: bytes, sig: int, group: bool) -> None:
    """Signal one recorded process (or its group) and wait; SIGKILL it if it hangs."""
    if not process_name_has(pid, needle):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline and process_name_has(pid, needle):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it when it is our child
        time.sleep(0.05)
    if process_name_has(pid, needle):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)


def with_application_name(dsn: str, name: str) -> str:
    """The URL with `application_name` added, unless it names one already."""
    if "application_name=" in dsn:
        return dsn
    return f"{dsn}{'&' if '?' in dsn else '?'}application_name={name}"


def ensure_database(dsn: str) -> None:
    """Create the DSN's database when it does not exist (the server must answer)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    name = params.get("dbname")
    if not name:
        return
    admin = make_conninfo(dsn, dbname="postgres", connect_timeout=5)
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if exists.fetchone() is None:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):  # a racing start
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        raise ClusterError(f"PostgreSQL is not reachable for {dsn}: {exc}") from None
