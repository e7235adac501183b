"""The cluster figures of docs/operations.md and docs/benchmarks.md ("Cluster").

    flock /tmp/bench.lock .venv/bin/python bench/cluster_bench.py [--per-language N]

1. Throughput and p99 through nginx with 1, 2 and 3 instances (wrk, the mixed URL list of
   bench/run.py), and the connections each instance holds while loaded.
2. One instance's memory in a cgroup of its own (v1 or v2): steady, under load, and at the
   peak of a publish under load; anonymous memory against page cache.
3. The cost of the metrics middleware: mix throughput and server CPU per request of one
   instance of this tree against the same instance of the tree before it (--baseline-ref),
   alternated three times.

Writes bench/results/cluster-<timestamp>.json and prints a summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path[:0] = [str(BENCH), str(ROOT)]

import harness  # noqa: E402
import sections  # noqa: E402
from harness import free_port  # noqa: E402

from cluster.runtime import Cluster, run_script  # noqa: E402
from tests.reliability.harness import tcp_connections  # noqa: E402

WARMUP = 2  # seconds of wrk before each measured run
DSN = "postgresql://postgres@127.0.0.1:5432/news_bench_cluster"


# -- cgroup memory -----------------------------------------------------------------------


def own_cgroup() -> tuple[Path, str]:
    """(directory of this process's memory cgroup, "v1" or "v2")."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "v1"
    path = Path("/proc/self/cgroup").read_text().strip().split(":", 2)[2]
    return Path("/sys/fs/cgroup") / path.lstrip("/"), "v2"


def make_cgroup() -> tuple[Path, str]:
    parent, version = own_cgroup()
    child = parent / f"news-bench-{os.getpid()}"
    child.mkdir()
    return child, version


def read_memory(cgroup: Path, version: str) -> dict[str, float]:
    """MiB: usage, working set (usage - inactive file, what kubelet and the HPA use),
    anonymous memory and page cache, as the kernel accounts them for the cgroup."""
    stat = dict(
        (k, int(v))
        for k, v in (line.split() for line in (cgroup / "memory.stat").read_text().splitlines())
    )
    if version == "v1":
        usage = int((cgroup / "memory.usage_in_bytes").read_text())
        anon, file = stat["total_rss"], stat["total_cache"]
        inactive_file, mapped = stat["total_inactive_file"], stat["total_mapped_file"]
    else:
        usage = int((cgroup / "memory.current").read_text())
        anon, file = stat["anon"], stat["file"]
        inactive_file, mapped = stat["inactive_file"], stat["file_mapped"]
    mib = 1024 * 1024
    return {
        "usage": round(usage / mib, 1),
        "working_set": round((usage - inactive_file) / mib, 1),
        "anon": round(anon / mib, 1),
        "file": round(file / mib, 1),
        "inactive_file": round(inactive_file / mib, 1),
        "mapped_file": round(mapped / mib, 1),
    }


class Sampler:
    """Samples a reading every `interval` seconds in a thread; keeps the peak of each key."""

    def __init__(self, read: Any, interval: float = 0.2) -> None:
        self.read, self.interval = read, interval
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError):
                self.samples.append(self.read())
            time.sleep(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def peak(self) -> dict[str, float]:
        keys = self.samples[0].keys() if self.samples else ()
        return {k: max(s[k] for s in self.samples) for k in keys}


# -- runs --------------------------------------------------------------------------------


def new_cluster(runtime: Path, instances: int, cgroup: Path | None = None) -> Cluster:
    return Cluster(
        runtime,
        instances=instances,
        port=free_port(),
        instance_ports=[free_port() for _ in range(instances)],
        unix_sockets=False,  # the TCP connections per instance are counted below
        dsn=DSN,
        env={"NEWS_LOG_LEVEL": "warning"},
        cgroup=cgroup,
    )


def prebuilt(cluster: Cluster, bundle: Path) -> None:
    cluster.runtime.mkdir(parents=True, exist_ok=True)
    run_script("install_bundle.py", str(bundle), str(cluster.build_dir))


def scaling(
    bundle: Path, mix: Path, load: argparse.Namespace, scratch: Path
) -> list[dict[str, Any]]:
    rows = []
    for n in (1, 2, 3):
        cluster = new_cluster(scratch / f"scale-{n}", n)
        prebuilt(cluster, bundle)
        cluster.start(None)
        try:
            harness.wrk(cluster.port, mix, WARMUP, load.connections)
            conns: dict[str, int] = {m.name: 0 for m in cluster.members}

            def count(c: Cluster = cluster, seen: dict[str, int] = conns) -> dict[str, float]:
                for m in c.members:
                    seen[m.name] = max(seen[m.name], tcp_connections(m.port))
                return {}

            with Sampler(count, 0.5):
                result = harness.wrk(cluster.port, mix, load.duration, load.connections)
            row = {"instances": n, "connections_per_instance": conns, **result}
            rows.append(row)
            harness.log(
                f"  {n} instance(s): {result['rps']:.0f} req/s, p99 {result['p99_ms']:.1f} ms,"
                f" errors {result['http_errors']}, upstream connections {conns}"
            )
        finally:
            cluster.stop()
    return rows


def memory(
    bundle: Path, second_src: Path, mix: Path, load: argparse.Namespace, scratch: Path
) -> dict[str, Any]:
    cgroup, version = make_cgroup()
    try:
        cluster = new_cluster(scratch / "memory", 1, cgroup)
        prebuilt(cluster, bundle)
        cluster.start(None)  # the install runs in the cgroup: the copy's pages are its own
        try:
            out: dict[str, Any] = {"cgroup": version}
            out["idle"] = read_memory(cgroup, version)
            with Sampler(lambda: read_memory(cgroup, version)) as s:
                harness.wrk(cluster.port, mix, load.duration, load.connections)
            out["load_peak"] = s.peak()
            out["after_load"] = read_memory(cgroup, version)
            # The second bundle is built outside the cgroup, as CI builds it elsewhere.
            cluster.build(second_src)
            errors: dict[str, Any] = {}

            def load() -> None:
                errors.update(harness.wrk(cluster.port, mix, load.duration, load.connections))

            loader = threading.Thread(target=load)
            with Sampler(lambda: read_memory(cgroup, version), 0.1) as s:
                loader.start()
                time.sleep(2)
                started = time.monotonic()
                cluster.publish(None, log=harness.log)
                out["publish_seconds"] = round(time.monotonic() - started, 2)
                loader.join()
            out["publish_peak"] = s.peak()
            out["publish_load"] = {k: errors[k] for k in ("rps", "p99_ms", "http_errors")}
            out["after_publish"] = read_memory(cgroup, version)
        finally:
            cluster.stop()
        return out
    finally:
        with contextlib.suppress(OSError):
            cgroup.rmdir()


def metrics_cost(
    bundle: Path, mix: Path, load: argparse.Namespace, scratch: Path, ref: str
) -> dict[str, Any]:
    """Mix throughput of one gunicorn (2 sync workers, as bench/run.py) from this tree and
    from `ref`, alternated A B A B so drift hits both."""
    runs: dict[str, list[float]] = {"baseline": [], "this tree": []}
    cpu: dict[str, list[float]] = {"baseline": [], "this tree": []}
    with harness.checkout(ref, scratch / "baseline") as base:
        for _ in range(3):
            for name, tree in (("baseline", base), ("this tree", ROOT)):
                proc, port = harness.serve(tree, bundle, scratch)
                try:
                    harness.wrk(port, mix, WARMUP, load.connections)
                    pids = [proc.pid, *harness.descendants(proc.pid)]
                    result = harness.wrk(port, mix, load.duration, load.connections, cpu_pids=pids)
                    runs[name].append(result["rps"])
                    cpu[name].append(result["server_cpu_us_per_req"])
                    harness.log(
                        f"  {name}: {result['rps']:.0f} req/s, p99 {result['p99_ms']:.1f} ms,"
                        f" server CPU {result['server_cpu_us_per_req']:.0f} us/request"
                    )
                finally:
                    harness.stop(proc)

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    return {
        "ref": ref,
        "rps": runs,
        "server_cpu_us_per_req": cpu,
        "rps_ratio": round(mean(runs["this tree"]) / mean(runs["baseline"]), 3),
        "cpu_ratio": round(mean(cpu["this tree"]) / mean(cpu["baseline"]), 3),
    }


def second_source(src: Path, scratch: Path) -> Path:
    """The corpus plus one article: a different bundle of the same size to publish."""
    out = scratch / "second-src"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("urls", "stats.json"))
    first = sorted(out.rglob("*.jsonl"))[0]
    with first.open(encoding="utf-8") as fh:
        record = json.loads(fh.readline())
    record["id"] = f"{record['id']}-published"
    (out / "published.jsonl").write_text(json.dumps(record, ensure_ascii=False) + "\n")
    return out


# -- docs/benchmarks.md -------------------------------------------------------------------


def render(files: list[dict[str, Any]]) -> str:
    """The cluster section of docs/benchmarks.md: each part from the last of `files` that
    has it (runs may measure one part each)."""
    parts = ("scaling", "memory", "metrics_cost")
    latest = {part: r for r in files for part in parts if part in r}
    results = [
        {k: v for k, v in r.items() if k not in parts or latest.get(k) is r}
        for r in files
        if any(latest.get(part) is r for part in parts)
    ]

    lines = ["## Cluster: nginx in front of 1 to 3 instances", ""]
    for r in results:
        parts = ", ".join(k for k in ("scaling", "memory", "metrics_cost") if k in r)
        lines.append(
            f"- {r['when']}: {parts}; {r['per_language']:,} articles per language "
            f"(bundle {r['bundle_mb']} MB); `{r['wrk']}`."
        )
    lines += [
        "",
        "Regenerate with `flock /tmp/bench.lock .venv/bin/python bench/cluster_bench.py`"
        " (options in its `--help`); raw figures in `bench/results/cluster-*.json`.",
        "",
    ]
    for r in results:
        if "scaling" in r:
            lines += [
                "Through nginx (`make cluster` topology, gthread workers, 2 per instance). The"
                " machine has 2 cores shared by nginx, wrk and every instance, so more instances"
                " add processes, not CPU: the figures show the proxy's overhead and that"
                " nothing is lost, not the scaling a cluster of machines would give.",
                "",
                "| instances | req/s | p50 ms | p99 ms | errors | upstream connections |",
                "|---:|---:|---:|---:|---:|---|",
            ]
            for row in r["scaling"]:
                conns = ", ".join(f"{k}: {v}" for k, v in row["connections_per_instance"].items())
                lines.append(
                    f"| {row['instances']} | {row['rps']:,.0f} | {row['p50_ms']:.1f} |"
                    f" {row['p99_ms']:.1f} | {row['http_errors']} | {conns} |"
                )
            lines.append("")
        if "memory" in r:
            m = r["memory"]
            lines += [
                "One instance (master + 2 workers) in a memory cgroup of its own"
                f" (cgroup {m['cgroup']}); MiB. Working set = usage - inactive file pages"
                " (what kubelet and the HPA read);"
                " anon = the processes' own memory; file = page cache charged to the cgroup"
                " (the bundle, mapped).",
                "",
                "| moment | usage | working set | anon | file | inactive file | mapped file |",
                "|---|---:|---:|---:|---:|---:|---:|",
            ]
            for label, key in (("idle, after start", "idle"), ("peak under load", "load_peak"),
                               ("peak during a publish under load", "publish_peak"),
                               ("after the publish", "after_publish")):  # fmt: skip
                v = m[key]
                lines.append(
                    f"| {label} | {v['usage']} | {v['working_set']} | {v['anon']} | {v['file']}"
                    f" | {v['inactive_file']} | {v['mapped_file']} |"
                )
            load = m["publish_load"]
            lines += ["", f"The publish took {m['publish_seconds']} s under load"
                      f" ({load['rps']:,.0f} req/s, p99 {load['p99_ms']:.1f} ms,"
                      f" {load['http_errors']} errors).", ""]  # fmt: skip
        if "metrics_cost" in r:
            c = r["metrics_cost"]
            lines += [
                f"Cost of the metrics middleware: one instance (2 sync workers) of this tree"
                f" against `{c['ref'][:10]}` (before /metrics), alternated three times:"
                f" mix throughput ratio **{c['rps_ratio']:.3f}**, server CPU per request ratio"
                f" **{c['cpu_ratio']:.3f}**.",
                "",
                "| tree | req/s per run | server CPU us/request per run |",
                "|---|---|---|",
            ]
            for name in ("baseline", "this tree"):
                rps = ", ".join(f"{x:,.0f}" for x in c["rps"][name])
                cpu = ", ".join(f"{x:.0f}" for x in c["server_cpu_us_per_req"][name])
                lines.append(f"| {name} | {rps} | {cpu} |")
            lines.append("")
    return "\n".join(lines)


def write_section(results: list[dict[str, Any]]) -> None:
    sections.write("cluster", render(results))


def main() -> int:
    parser = harness.cli.parser(__doc__)
    parser.add_argument("--per-language", type=int, default=2000)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--baseline-ref", default=None, help="tree without /metrics (default: merge-base with main)"
    )
    parser.add_argument("--only", default="scaling,memory,metrics")
    parser.add_argument(
        "--render", nargs="+", type=Path, metavar="RESULT_JSON",
        help="only write the cluster section of docs/benchmarks.md from result files",
    )  # fmt: skip
    args = parser.parse_args()
    if args.render:
        write_section([json.loads(p.read_text()) for p in args.render])
        return 0
    if args.baseline_ref is None:
        args.baseline_ref = subprocess.run(
            ["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True,
            check=True,
        ).stdout.strip()  # fmt: skip
    only = set(args.only.split(","))
    src, _ = harness.corpus(args.per_language)
    bundle, build = harness.build_bundle(src)
    mix = src / "urls" / "mix.txt"
    result: dict[str, Any] = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": harness.machine(),
        "per_language": args.per_language,
        "bundle_mb": round(build["bytes"] / 2**20, 1),
        "wrk": f"wrk -t1 -c{args.connections} -d{args.duration}s -s bench/wrk/cycle.lua "
        "http://127.0.0.1:PORT -- urls/mix.txt",
    }
    with tempfile.TemporaryDirectory(prefix="news-cluster-bench-") as tmp:
        scratch = Path(tmp)
        if "scaling" in only:
            harness.log("through nginx, 1 to 3 instances")
            result["scaling"] = scaling(bundle, mix, args, scratch)
        if "memory" in only:
            harness.log("one instance's memory in its own cgroup")
            result["memory"] = memory(bundle, second_source(src, scratch), mix, args, scratch)
            harness.log(json.dumps(result["memory"], indent=1))
        if "metrics" in only:
            harness.log(f"/metrics and JSON access log cost against {args.baseline_ref}")
            result["metrics_cost"] = metrics_cost(bundle, mix, args, scratch, args.baseline_ref)
            harness.log(json.dumps(result["metrics_cost"]))
    harness.RESULTS.mkdir(exist_ok=True)
    stamp = result["when"].replace(":", "").replace("-", "")
    path = harness.RESULTS / f"cluster-{stamp}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    harness.log(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
