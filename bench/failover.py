"""Losing an instance under load, measured with wrk (docs/reliability.md, "Losing an
instance"; docs/benchmarks.md, "Losing an instance").

    flock /tmp/bench.lock .venv/bin/python bench/failover.py --case master

Starts the `make cluster` topology (nginx in front of three gunicorn instances on unix
sockets, gthread workers, PostgreSQL at 127.0.0.1:5432; no edge) on a runtime directory of
its own, runs wrk through nginx (`-t1 -c32 --timeout 1s`, six read URLs in turn) and,
`--kill-after` seconds in, sends SIGKILL to the first instance:

- `master`: its gunicorn master alone; its workers are orphaned
- `worker`: one of its workers; the master replaces it
- `instance`: its whole process group (the master and its workers) at once

Then reports what wrk saw (requests, errors of every kind, p50/p99/max, answers over 1 s),
what nginx logged (answers not 200, retried requests, the slowest request and upstream
exchange, its error log by cause) and, for `master`, when the orphaned workers exited.
`--case all` runs the three in turn, each on a fresh cluster. Prints one JSON object per
case and appends them to `--json` when given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(ROOT)]

from cluster.runtime import Cluster, Instance  # noqa: E402

DSN = "postgresql://postgres@127.0.0.1:5432/news_bench_failover"
SAMPLE = ROOT / "data" / "sample"
CASES = ("master", "worker", "instance")


def read_paths() -> list[str]:
    """The read mix of tests/cluster (list, latest, search, categories, two articles)."""
    ids = []
    with open(SAMPLE / "en.jsonl", encoding="utf-8") as src:
        for line in src:
            if line.strip():
                ids.append(json.loads(line)["id"])
            if len(ids) == 2:
                break
    return [
        "/api/v1/en/articles?page=1&page_size=20",
        "/api/v1/ja/articles/latest?limit=10",
        "/api/v1/en/articles/search?q=economy",
        "/api/v1/fr/categories",
        f"/api/v1/en/articles/{ids[0]}",
        f"/api/v1/en/articles/{ids[1]}",
    ]


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def watch_exits(
    pids: list[int], since: float, out: dict[int, float], stop: threading.Event
) -> None:
    """Record, for each pid, how long after `since` it was gone."""
    while not stop.is_set() and len(out) < len(pids):
        for pid in pids:
            if pid not in out and not alive(pid):
                out[pid] = round(time.monotonic() - since, 3)
        time.sleep(0.01)


def kill(case: str, victim: Instance) -> tuple[list[int], list[int]]:
    """Send the case's SIGKILL; return (killed pids, the victim's other pids)."""
    assert victim.pid is not None
    workers = children(victim.pid)
    if case == "master":
        os.kill(victim.pid, signal.SIGKILL)
        return [victim.pid], workers
    if case == "worker":
        os.kill(workers[0], signal.SIGKILL)
        return [workers[0]], [victim.pid, *workers[1:]]
    os.killpg(victim.pid, signal.SIGKILL)
    return [victim.pid, *workers], []


def nginx_report(nginx_dir: Path, killed_at: str) -> dict[str, Any]:
    records = []
    for line in (nginx_dir / "access.log").read_text("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    durations = sorted(float(r["duration"]) for r in records)
    upstream = []
    for r in records:
        for part in re.split(r"[,:] ", r["upstream_duration"]):
            with contextlib.suppress(ValueError):
                upstream.append(float(part))
    causes: Counter[str] = Counter()
    for line in (nginx_dir / "error.log").read_text("utf-8", "replace").splitlines():
        match = re.search(r"\[(error|warn|crit|alert)\] \d+#\d+: \*?\d* ?(.*?)(, client:|$)", line)
        if match:
            causes[re.sub(r"\d+", "N", match.group(2))[:120]] += 1
    return {
        "requests": len(records),
        "not_200": dict(Counter(str(r["status"]) for r in records if r["status"] != 200)),
        "retried": sum(1 for r in records if "," in r["upstream"]),
        "over_1s": sum(1 for d in durations if d > 1.0),
        "slowest_s": durations[-5:],
        "slowest_upstream_s": sorted(upstream)[-5:],
        "error_log": dict(causes.most_common()),
        "killed_at": killed_at,
    }


def run_case(args: argparse.Namespace, case: str) -> dict[str, Any]:
    runtime = Path(tempfile.mkdtemp(prefix=f"failover-{case}-"))
    cluster = Cluster(runtime, instances=3, port=args.port, dsn=args.dsn)
    urls = runtime / "urls.txt"
    cluster.start(SAMPLE)
    victim = cluster.members[0]
    orphans: list[int] = []
    exits: dict[int, float] = {}
    stop_watch = threading.Event()
    try:
        urls.write_text("\n".join(read_paths()) + "\n")
        command = [
            "wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.duration}s",
            f"--timeout={args.timeout}", "--latency", "-s", str(BENCH / "wrk" / "failover.lua"),
            cluster.base_url, "--", str(urls),
        ]  # fmt: skip
        wrk = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        time.sleep(args.kill_after)
        killed_at = datetime.now(UTC).isoformat(timespec="milliseconds")
        since = time.monotonic()
        killed, orphans = kill(case, victim)
        watcher = threading.Thread(
            target=watch_exits, args=(orphans, since, exits, stop_watch), daemon=True
        )
        watcher.start()
        output, _ = wrk.communicate()
        watcher.join(timeout=1)
    finally:
        stop_watch.set()
        assert victim.pid is not None
        with contextlib.suppress(ChildProcessError):
            os.waitpid(victim.pid, os.WNOHANG)
        if case != "worker":
            with contextlib.suppress(ProcessLookupError):
                os.killpg(victim.pid, signal.SIGKILL)  # orphans still alive at the end
            with contextlib.suppress(ChildProcessError):
                os.waitpid(victim.pid, 0)
            victim.pid = None
        cluster.stop()
    line = next(x for x in output.splitlines() if x.startswith("FAILOVER_JSON "))
    report = {
        "case": case,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(command),
        "kill_after_s": args.kill_after,
        "killed": killed,
        "wrk": json.loads(line.split(" ", 1)[1]),
        "nginx": nginx_report(cluster.nginx_dir, killed_at),
        "others_gone_after_s": {str(p): exits.get(p) for p in orphans} if case == "master" else {},
        "victim_log_after_kill": victim.log_path.read_text("utf-8", "replace")[-1500:],
    }
    report["wrk_text"] = output
    if not args.keep:
        shutil.rmtree(runtime, ignore_errors=True)
    else:
        report["runtime"] = str(runtime)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", choices=[*CASES, "all"], required=True)
    parser.add_argument("--port", type=int, default=8180, help="nginx port")
    parser.add_argument("--dsn", default=DSN)
    parser.add_argument("--duration", type=int, default=30, help="seconds of wrk")
    parser.add_argument("--kill-after", type=float, default=5.0)
    parser.add_argument("--timeout", default="1s", help="wrk's --timeout")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--keep", action="store_true", help="keep the runtime directory")
    parser.add_argument("--json", type=Path, help="append the reports to this file")
    args = parser.parse_args()
    reports = []
    for case in CASES if args.case == "all" else (args.case,):
        report = run_case(args, case)
        text = report.pop("wrk_text")
        log = report.pop("victim_log_after_kill")
        print(json.dumps(report, indent=2))
        if args.keep:
            print(text)
            print(log)
        reports.append(report)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as out:
            for report in reports:
                out.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
