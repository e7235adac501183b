"""Time Searcher.search in process over a built bundle and the benchmark's search queries
(not a test; docs/search.md "Query cost" has figures).

PYTHONPATH=. python bench/search_queries.py BUNDLE_DIR URLS_FILE [--repeat N] [--dump OUT.json]

URLS_FILE is a bench corpus's urls/search.txt (/api/v1/{language}/articles/search?q=...).
--dump writes every query's results (several pages, and the full order) for comparing two
implementations with --compare.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import orjson

from app.bundle.reader import Bundle

FAMILIES = {"Latin": ("en", "fr", "de", "es", "it"), "CJK": ("ja", "ko", "zh_cn", "zh_tw")}
PAGES = ((0, 20), (0, 1), (7, 13), (40, 20), (0, 10**9))


def queries(path: Path) -> list[tuple[str, str]]:
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        url = urlsplit(line.strip())
        language = url.path.split("/")[3]
        out.append((language, parse_qs(url.query, keep_blank_values=True)["q"][0]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle", type=Path)
    parser.add_argument("urls", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--compare", type=Path)
    args = parser.parse_args()
    bundle = Bundle.load(args.bundle)
    qs = queries(args.urls)
    searchers = {lang: bundle.languages[lang] for lang, _ in qs}
    for lang, q in qs:  # warm the page cache and any lazy state
        searchers[lang].search(q, 0, 20)
    per_query: dict[int, float] = {}
    for _ in range(args.repeat):
        for i, (lang, q) in enumerate(qs):
            search = searchers[lang].search
            start = time.perf_counter()
            search(q, 0, 20)
            elapsed = time.perf_counter() - start
            per_query[i] = min(per_query.get(i, elapsed), elapsed)
    for family, langs in FAMILIES.items():
        times = sorted(per_query[i] * 1e3 for i, (lang, _) in enumerate(qs) if lang in langs)
        if not times:
            continue
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(
            f"{family:5}  n={len(times):4}  mean {statistics.fmean(times):.3f} ms  "
            f"p50 {times[len(times) // 2]:.3f} ms  p99 {p99:.3f} ms  max {times[-1]:.3f} ms"
        )
    total = sum(per_query.values())
    print(f"all    n={len(qs):4}  mean {total / len(qs) * 1e3:.3f} ms")
    if args.dump or args.compare:
        results = [
            [lang, q, [list(searchers[lang].search(q, o, n)) for o, n in PAGES]] for lang, q in qs
        ]
        if args.dump:
            args.dump.write_bytes(orjson.dumps(results))
        if args.compare:
            expected = orjson.loads(args.compare.read_bytes())
            bad = [r for r, e in zip(results, expected, strict=True) if r != e]
            print(f"compare: {len(results) - len(bad)} identical, {len(bad)} different")
            for lang, q, _ in bad[:10]:
                print("  differs:", lang, q)


if __name__ == "__main__":
    main()
