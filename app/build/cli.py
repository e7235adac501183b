"""`python scripts/build_bundles.py --src SRC_DIR --out OUT_DIR` (docs/publishing.md): the
command line of the builder (app.build.builder)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import orjson

from app.build.builder import Merge, build_report
from app.build.records import SourceError
from app.bundle.commit import OutputError, report_unchanged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_bundles.py",
        description="Compile source JSONL articles into a servable bundle directory; "
        "incremental when OUT already holds a bundle (docs/publishing.md).",
    )
    parser.add_argument("--src", required=True, type=Path, help="directory of *.jsonl sources")
    parser.add_argument("--out", required=True, type=Path, help="bundle directory to update")
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
    args = parser.parse_args(argv)
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
