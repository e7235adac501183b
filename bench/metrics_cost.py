"""What the metrics middleware (app/metrics.py) costs, in one run: the app with and without it.

    flock /tmp/bench.lock .venv/bin/python bench/metrics_cost.py [--per-language 2000]
        [--duration 5] [--rounds 10] [--servers gunicorn,granian] [--seconds 3] [--docs]

The same code, bundle and settings twice: `app.wsgi:app`, and bench/app_without_metrics.py,
which takes the Metrics middleware out of the app create_app() builds (nothing else).

* through servers: both apps started at once under each server (gunicorn with the production
  config, 2 sync workers; granian with deploy/granian/options, 2 workers), wrk `-t1 -c32`
  over the benchmark mix, alternated A B B A round by round; requests/s and the server's CPU
  per request (its processes' user + system time: the steadier figure on a shared machine);
* in process (no server, bench/profile_app.py's measure): CPU per request over the mix, the
  two apps alternated round by round.

The cost is 1 - (with / without) for requests/s, and with / without - 1 for CPU per request.
Target (docs/benchmarks.md): <= 3% of throughput.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]
import harness  # noqa: E402
import profile_app  # noqa: E402
import sections  # noqa: E402

VARIANTS = {"with metrics": harness.APP, "without metrics": "app_without_metrics:app"}
TARGET = 0.03


def through_servers(
    server: str, bundle: Path, mix: Path, scratch: Path, duration: int, rounds: int
) -> dict[str, Any]:
    procs = {}
    try:
        for name, target in VARIANTS.items():
            procs[name] = harness.serve(
                harness.ROOT, bundle, scratch, server, target, extra_path=BENCH
            )
        for _, port in procs.values():
            harness.wrk(port, mix, 3)  # warm-up: every worker, every cache
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in VARIANTS}
        for r in range(rounds):
            order = list(VARIANTS) if r % 2 == 0 else list(reversed(VARIANTS))
            for name in order:
                proc, port = procs[name]
                pids = [proc.pid, *harness.workers_of(proc)]
                result = harness.wrk(port, mix, duration, cpu_pids=pids)
                if result["http_errors"]:
                    raise RuntimeError(f"{server} {name}: {result['http_errors']} errors")
                runs[name].append(result)
                harness.log(
                    f"{server} round {r + 1} {name:15s} {result['rps']:8.1f} req/s"
                    f"  {result['server_cpu_us_per_req']:6.1f} µs CPU/request"
                )
    finally:
        for proc, _ in procs.values():
            harness.stop(proc)
    return summary(
        {
            name: {
                "rps": [round(r["rps"], 1) for r in rs],
                "cpu_us": [r["server_cpu_us_per_req"] for r in rs],
            }
            for name, rs in runs.items()
        }
    )


def in_process(bundle: Path, mix: Path, scratch: Path, seconds: float, rounds: int) -> dict:
    os.environ["NEWS_BUNDLE_DIR"] = str(bundle)
    os.environ["NEWS_COMMENTS_DSN"] = f"sqlite:///{scratch / 'in-process.sqlite3'}"
    from app_without_metrics import without_metrics

    from app.wsgi import create_app

    apps = {"with metrics": create_app(), "without metrics": without_metrics(create_app())}
    urls = [u for u in mix.read_text().splitlines() if u]
    for app in apps.values():
        profile_app.measure(app, urls, 1.0)  # warm-up: caches filled, flusher started
    cpu: dict[str, list[float]] = {name: [] for name in apps}
    for r in range(rounds):
        for name in list(apps) if r % 2 == 0 else list(reversed(apps)):
            us, _, _ = profile_app.measure(apps[name], urls, seconds)
            cpu[name].append(round(us, 2))
            harness.log(f"in process round {r + 1} {name:15s} {us:7.2f} µs CPU/request")
    return summary({name: {"cpu_us": values} for name, values in cpu.items()})


def summary(runs: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """The rounds of both variants, their medians, and the cost of the metrics. Each ratio
    is the median of the per-round ratios (round r of one against round r of the other)."""
    with_, without = runs["with metrics"], runs["without metrics"]
    out: dict[str, Any] = {"rounds": runs}
    if "rps" in with_:
        ratios = [a / b for a, b in zip(with_["rps"], without["rps"], strict=True)]
        out["rps_cost"] = round(1 - statistics.median(ratios), 4)
        out["rps_median"] = {k: statistics.median(v["rps"]) for k, v in runs.items()}
    ratios = [a / b for a, b in zip(with_["cpu_us"], without["cpu_us"], strict=True)]
    out["cpu_cost"] = round(statistics.median(ratios) - 1, 4)
    out["cpu_us_median"] = {k: statistics.median(v["cpu_us"]) for k, v in runs.items()}
    return out


def render(f: dict[str, Any], command: str) -> None:
    def verdict(cost: float) -> str:
        if cost < 0:  # the app without metrics measured slower: the rounds' noise
            return "met (no cost above the noise)"
        return "met" if cost <= TARGET else "not met"

    lines = [
        "## Metrics cost",
        "",
        f"`flock /tmp/bench.lock {f.get('command', command)}` ({f['when']}): the app with its "
        "metrics (`app/metrics.py`: the middleware, and the count of each answer the response "
        "cache sends) against the same app without them (`bench/app_without_metrics.py` takes "
        "them out of what `create_app()` builds; nothing else differs), same bundle "
        f"(9 x {f['per_language']:,} generated articles), the benchmark mix. Through servers: "
        f"both started at once, wrk `-t1 -c32`, {f['duration_s']} s per run, "
        f"{f['rounds']} rounds alternated (A B B A), server CPU = its processes' user + system "
        "time per request. In process: `bench/profile_app.py`'s measure, no server, "
        f"{f['seconds']} s per run, {f['in_process_rounds']} rounds alternated. Cost = "
        "1 - with/without (req/s) or with/without - 1 (CPU per request), the median of the "
        "per-round ratios. Target: <= 3% of throughput, through a server (the machine's two "
        "cores are shared with other work: a round's req/s moves by more than the cost, the "
        "server's CPU per request less). In process there is no server and no target: the "
        "figure is the metrics' share of the app's own CPU, where a repeated answer comes from "
        "the response cache in a few µs.",
        "",
        "| where | with metrics | without | cost: req/s | cost: CPU per request | target |",
        "|---|---|---|---|---|---|",
    ]
    for server, row in f["servers"].items():
        rps, cpu = row["rps_median"], row["cpu_us_median"]
        lines.append(
            f"| {server}, req/s (CPU µs/request) | {rps['with metrics']:,.0f} "
            f"({cpu['with metrics']:.0f}) | {rps['without metrics']:,.0f} "
            f"({cpu['without metrics']:.0f}) | {row['rps_cost']:.1%} | {row['cpu_cost']:.1%} "
            f"| <= 3%: {verdict(row['rps_cost'])} |"
        )
    if "in_process" in f:
        row = f["in_process"]
        cpu = row["cpu_us_median"]
        lines.append(
            f"| in process, CPU µs/request | {cpu['with metrics']:.1f} "
            f"| {cpu['without metrics']:.1f} | | {row['cpu_cost']:.1%} | none |"
        )
    lines += ["", "Rounds (req/s; CPU µs/request):", ""]
    for server, row in f["servers"].items():
        for name, runs in row["rounds"].items():
            rps = ", ".join(f"{x:,.0f}" for x in runs["rps"])
            cpu_rounds = ", ".join(f"{x:.0f}" for x in runs["cpu_us"])
            lines.append(f"- {server}, {name}: {rps}; {cpu_rounds}")
    if "in_process" in f:
        for name, runs in f["in_process"]["rounds"].items():
            lines.append(f"- in process, {name}: {', '.join(f'{x:.1f}' for x in runs['cpu_us'])}")
    lines.append("")
    sections.write("metrics-cost", "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    parser.add_argument("--per-language", type=int, default=2_000)
    harness.cli.add_rounds(parser, duration=5, rounds=10)
    parser.add_argument("--servers", default="gunicorn,granian", help="comma-separated")
    parser.add_argument("--seconds", type=float, default=3.0, help="per in-process run")
    parser.add_argument("--in-process-rounds", type=int, default=6)
    harness.cli.add_outputs(parser)
    args = parser.parse_args(argv)
    command = harness.cli.invocation("metrics_cost.py", argv)
    if args.render:
        render(json.loads(args.render.read_text()), command)
        return 0
    src, _ = harness.corpus(args.per_language)
    bundle = harness.cached_bundle(src)
    if not (bundle / "manifest.json").exists():
        bundle, _ = harness.build_bundle(src)
    mix = harness.url_files(src)["mix"]
    # In process, the metrics live in this process's registry, as with one-process servers.
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    figures: dict[str, Any] = {
        "command": command,
        "per_language": args.per_language,
        "duration_s": args.duration,
        "rounds": args.rounds,
        "seconds": args.seconds,
        "in_process_rounds": args.in_process_rounds,
        "servers": {},
    }
    with tempfile.TemporaryDirectory(prefix="news-metrics-cost-") as tmp:
        scratch = Path(tmp)
        for server in filter(None, args.servers.split(",")):
            figures["servers"][server] = through_servers(
                server, bundle, mix, scratch, args.duration, args.rounds
            )
            harness.log(f"{server}: {json.dumps(figures['servers'][server])}")
        if args.in_process_rounds:
            figures["in_process"] = in_process(
                bundle, mix, scratch, args.seconds, args.in_process_rounds
            )
    figures["when"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    harness.cli.emit(figures, args, render, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
