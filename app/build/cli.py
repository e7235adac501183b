"""`python scripts/build_bundles.py --src SRC_DIR --out OUT_DIR` (API contract, section 6)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

from app.build.compile import compile_language
from app.build.records import Article, SourceError, read_articles
from app.build.writer import BundleWriter, OutputError, check_replaceable, output_lock
from app.languages import LANGUAGES


def build(src: Path, out: Path) -> str:
    """Validate `src` and replace `out` with its bundle; returns the bundle id.

    Raises SourceError or OutputError; in both cases `out` is left as it was.
    """
    articles = read_articles(src)
    by_language: dict[str, list[Article]] = defaultdict(list)
    for article in articles:
        by_language[article.language].append(article)
    with output_lock(out):
        check_replaceable(out)
        writer = BundleWriter(out)
        try:
            for language in LANGUAGES:
                writer.add_language(language, *compile_language(language, by_language[language]))
            return writer.finish()
        except BaseException:
            writer.discard()
            raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_bundles.py",
        description="Compile source JSONL articles into a servable bundle directory.",
    )
    parser.add_argument("--src", required=True, type=Path, help="directory of *.jsonl sources")
    parser.add_argument("--out", required=True, type=Path, help="bundle directory to replace")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        bundle_id = build(args.src, args.out)
    except SourceError as exc:
        print(f"build failed: {len(exc.problems)} problem(s) in {args.src}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        print(f"{args.out} was left unchanged.", file=sys.stderr)
        return 1
    except (OutputError, OSError) as exc:
        print(f"build failed: {exc}\n{args.out} was left unchanged.", file=sys.stderr)
        return 1
    print(f"built bundle {bundle_id} in {args.out} ({time.monotonic() - started:.2f} s)")
    return 0
