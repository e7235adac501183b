"""Server processes of a benchmark: a free port, start, readiness, stop, and what each
process uses (CPU time, memory), read from /proc."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from harness.paths import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    cmd: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        # Own session: stop() signals exactly this process group and nothing else.
        return subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_ready(
    port: int, proc: subprocess.Popen[bytes], path: str = "/health", timeout: float = 60.0
) -> float:
    """Seconds from now until ``path`` answers 200 (polled every 5 ms)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path)
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return time.perf_counter() - started
        except OSError:
            pass
        time.sleep(0.005)
    raise RuntimeError(f"no answer on {path} within {timeout} s")


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def workers_of(proc: subprocess.Popen[bytes]) -> list[int]:
    """Worker processes: descendants running the app (not helpers such as resource trackers)."""
    pids = []
    for pid in descendants(proc.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            pids.append(pid)
    return pids


def memory(pid: int) -> dict[str, int]:
    """kB from smaps_rollup. Private_Clean holds bundle pages touched by this worker alone: they
    are page cache, not heap, so the private figure that matters is Private_Dirty."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0])
    return {
        "pid": pid,
        "rss_kb": values["Rss"],
        "pss_kb": values["Pss"],
        "shared_kb": values["Shared_Clean"] + values["Shared_Dirty"],
        "private_kb": values["Private_Clean"] + values["Private_Dirty"],
        "private_dirty_kb": values["Private_Dirty"],
        "anonymous_kb": values["Anonymous"],
    }


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
    return total / os.sysconf("SC_CLK_TCK")
