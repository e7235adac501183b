"""`python scripts/build_bundles.py --src SRC_DIR --out OUT_DIR` (API contract, section 6)."""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from app.build.compile import compile_language
from app.build.records import Article, SourceError, read_articles
from app.build.writer import BundleWriter, OutputError, check_replaceable, output_lock
from app.languages import LANGUAGES

# Articles by language, set before the worker pool forks so children inherit them
# instead of receiving them pickled.
_BY_LANGUAGE: dict[str, list[Article]] = {}


def _compile_and_write(writer: BundleWriter, language: str) -> tuple[str, dict, dict]:
    files, meta = compile_language(language, _BY_LANGUAGE[language])
    return language, writer.write_language(language, files), meta


def build(src: Path, out: Path, jobs: int | None = None) -> str:
    """Validate `src` and replace `out` with its bundle; returns the bundle id.

    Languages compile in parallel (`jobs` processes, default one per CPU); the output is
    the same whatever the number of jobs. Raises SourceError or OutputError; in both cases
    `out` is left as it was.
    """
    articles = read_articles(src)
    by_language: dict[str, list[Article]] = defaultdict(list)
    for article in articles:
        by_language[article.language].append(article)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(LANGUAGES)))
    # Biggest languages first, so the slowest compile never starts last.
    order = sorted(LANGUAGES, key=lambda lang: -sum(len(a.content) for a in by_language[lang]))
    with output_lock(out):
        check_replaceable(out)
        writer = BundleWriter(out)
        try:
            _BY_LANGUAGE.update({lang: by_language[lang] for lang in LANGUAGES})
            if jobs == 1:
                results = [_compile_and_write(writer, lang) for lang in order]
            else:
                context = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
                    results = list(pool.map(_compile_and_write, [writer] * len(order), order))
            for language, entries, meta in sorted(results):
                writer.add_language(language, entries, meta)
            return writer.finish()
        except BaseException:
            writer.discard()
            raise
        finally:
            _BY_LANGUAGE.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_bundles.py",
        description="Compile source JSONL articles into a servable bundle directory.",
    )
    parser.add_argument("--src", required=True, type=Path, help="directory of *.jsonl sources")
    parser.add_argument("--out", required=True, type=Path, help="bundle directory to replace")
    parser.add_argument(
        "--jobs", type=int, default=None, help="parallel language compiles (default: CPUs)"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        bundle_id = build(args.src, args.out, args.jobs)
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
