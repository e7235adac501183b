"""`python scripts/build_bundles.py --src SRC_DIR --out OUT_DIR` (docs/publishing.md): the
command line of the builder (app.builder.builder)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

import orjson

from app.builder import shards
from app.builder.builder import BuildReport, Merge, build_report
from app.builder.records import SourceError
from app.bundle.commit import OutputError, report_unchanged


def log_to_console() -> None:
    """The builder's log (app.builder.*): notes on stdout, warnings on stderr with a
    `warning:` prefix, as a pipeline reads them."""
    notes = logging.StreamHandler(sys.stdout)
    notes.setLevel(logging.INFO)
    notes.addFilter(lambda record: record.levelno < logging.WARNING)
    notes.setFormatter(logging.Formatter("%(message)s"))
    warnings = logging.StreamHandler(sys.stderr)
    warnings.setLevel(logging.WARNING)
    warnings.setFormatter(logging.Formatter("warning: %(message)s"))
    logger = logging.getLogger("app.builder")
    logger.setLevel(logging.INFO)
    logger.handlers = [notes, warnings]
    logger.propagate = False


def main(argv: list[str] | None = None) -> int:
    log_to_console()
    parser = argparse.ArgumentParser(
        prog="build_bundles.py",
        description="Compile source JSONL articles into a servable bundle directory; "
        "incremental when OUT already holds a bundle (docs/publishing.md).",
    )
    parser.add_argument("--src", type=Path, help="directory of *.jsonl sources")
    parser.add_argument("--out", type=Path, help="bundle directory to update")
    parser.add_argument("--full", action="store_true", help="build from scratch")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--merge", action="store_true", help="merge every language into one segment")
    group.add_argument(
        "--no-merge", action="store_true", help="never merge segments (for measurements)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="parallel compiles and merges (default: CPUs)"
    )
    parser.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for another build (600)"
    )
    parser.add_argument("--report", type=Path, help="write what changed as JSON to this file")
    parser.add_argument(
        "--purge-keys",
        type=Path,
        help="write the surrogate keys a CDN must purge, one a line, to this file ('-': stdout)",
    )
    sharded = parser.add_argument_group(
        "a from-scratch build on many machines (docs/publishing.md, 'Building on many machines')"
    )
    sharded.add_argument(
        "--step",
        choices=("plan", "shard", "merge"),
        help="plan: scan --src into --work; shard: build shard --shard of --shards of the plan; "
        "merge: merge the --shards shards into --out",
    )
    sharded.add_argument("--work", type=Path, help="shared directory of the plan and the shards")
    sharded.add_argument(
        "--shard",
        type=int,
        default=_env_int("JOB_COMPLETION_INDEX"),
        help="this shard's index, 0 to N-1 (default: $JOB_COMPLETION_INDEX)",
    )
    sharded.add_argument("--shards", type=int, help="how many shards N")
    args = parser.parse_args(argv)
    if args.step is not None:
        return _step(parser, args)
    if args.src is None or args.out is None:
        parser.error("--src and --out are required")
    merge: Merge = "all" if args.merge else "none" if args.no_merge else "auto"
    started = time.monotonic()
    try:
        report = build_report(
            args.src, args.out, args.jobs, full=args.full, merge=merge, wait=args.wait
        )
    except SourceError as exc:
        problems = f"{len(exc.problems)} problem(s) in {args.src}"
        return report_unchanged("build", args.out, problems, exc.problems)
    except (OutputError, OSError) as exc:
        return report_unchanged("build", args.out, str(exc))
    return _built(args, report, started)


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value is not None and value.strip() else None


def _step(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """One step of a sharded from-scratch build (app/builder/shards.py)."""
    need = {"plan": ("src", "work"), "shard": ("src", "work", "shard", "shards")}
    need["merge"] = ("work", "shards", "out")
    missing = [f"--{name}" for name in need[args.step] if getattr(args, name) is None]
    if missing:
        parser.error(f"--step {args.step} needs {' '.join(missing)}")
    started = time.monotonic()
    if args.step == "plan":
        try:
            plan_id, counts = shards.plan_step(args.src, args.work, args.jobs)
        except SourceError as exc:
            problems = f"{len(exc.problems)} problem(s) in {args.src}"
            lines = [f"plan failed: {problems}", *(f"  {p}" for p in exc.problems)]
            print("\n".join([*lines, f"{args.work} was left unchanged."]), file=sys.stderr)
            return 1
        print(
            f"plan {plan_id} in {args.work} ({time.monotonic() - started:.2f} s): "
            f"{counts[0]} articles in {counts[1]} units"
        )
        return 0
    if args.step == "shard":
        try:
            units, articles = shards.run_shard(
                args.src, args.work, args.shard, args.shards, args.jobs
            )
        except (SourceError, shards.ShardError) as exc:
            details = exc.problems if isinstance(exc, SourceError) else [str(exc)]
            print(
                "\n".join(
                    [f"shard {args.shard} of {args.shards} failed:", *(f"  {d}" for d in details)]
                ),
                file=sys.stderr,
            )
            return 1
        print(
            f"shard {args.shard} of {args.shards} in {shards.shard_dir(args.work, args.shard)} "
            f"({time.monotonic() - started:.2f} s): {articles} articles in {units} units"
        )
        return 0
    try:
        report = shards.merge_shards(args.work, args.shards, args.out, args.jobs, wait=args.wait)
    except shards.ShardError as exc:
        return report_unchanged("merge", args.out, str(exc))
    except (OutputError, OSError) as exc:
        return report_unchanged("merge", args.out, str(exc))
    return _built(args, report, started)


def _built(args: argparse.Namespace, report: BuildReport, started: float) -> int:
    kind = "incremental" if report.incremental else "full"
    print(
        f"built bundle {report.bundle_id} in {args.out} ({kind}, "
        f"{time.monotonic() - started:.2f} s): {report.added} new or changed, "
        f"{report.retracted} removed, {report.retractions} retraction notice(s) changed, "
        f"{report.merged} merged segment(s)"
    )
    print(
        f"CDN: purge {len(report.purge_keys)} surrogate key(s)"
        + (f": {' '.join(report.purge_keys)}" if len(report.purge_keys) <= 20 else "")
    )
    if args.report:
        args.report.write_bytes(orjson.dumps(report.__dict__, option=orjson.OPT_INDENT_2))
    if args.purge_keys:
        text = "".join(f"{key}\n" for key in report.purge_keys)
        if str(args.purge_keys) == "-":
            sys.stdout.write(text)
        else:
            args.purge_keys.write_text(text)
    return 0
