"""wrk runs: one load over a URL list (bench/wrk/cycle.lua), read back from the JSON line the
script prints, with the server's CPU per request when its processes are given."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from typing import Any

from harness.paths import BENCH, shown
from harness.processes import cpu_seconds

WRK = shutil.which("wrk") or "/usr/bin/wrk"
LUA = BENCH / "wrk" / "cycle.lua"


def wrk(
    port: int,
    urls: Any,
    duration: int,
    connections: int = 32,
    *,
    threads: int = 1,
    rate: int | None = None,
    cpu_pids: list[int] | None = None,
    headers: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One run of `duration` seconds cycling through the file `urls` in order; with `rate`,
    at that many requests a second (cycle.lua paces them)."""
    cmd = [
        WRK,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{duration}s",
        "--timeout",
        "10s",
        *(arg for header in headers for arg in ("-H", header)),
        "-s",
        str(LUA),
        f"http://127.0.0.1:{port}",
        "--",
        str(urls),
    ]
    if rate:
        cmd.append(str(rate))
    cpu_before = cpu_seconds(cpu_pids or [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 120, check=True)
    line = next((x for x in out.stdout.splitlines() if x.startswith("BENCH_JSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no result:\n{out.stdout}\n{out.stderr}")
    result: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
    if cpu_pids:  # server CPU per request: a figure that does not depend on the client's share
        used = cpu_seconds(cpu_pids) - cpu_before
        result["server_cpu_us_per_req"] = round(used * 1e6 / max(result["requests"], 1), 1)
    result["command"] = shown(cmd).replace(str(port), "PORT")
    return result


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Requests/s and p99 of alternated rounds of one load: the medians and every round."""
    return {
        "rps_median": round(statistics.median(r["rps"] for r in runs), 1),
        "p99_ms_median": round(statistics.median(r["p99_ms"] for r in runs), 2),
        "rps": [round(r["rps"], 1) for r in runs],
    }
