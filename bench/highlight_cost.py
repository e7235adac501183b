"""In-process CPU of `highlight=true`: a search page with and without highlights.

    python bench/highlight_cost.py --bundle B --urls CORPUS/urls [--code DIR] [--page-size 20]

For each query of the corpus's ``urls/search.txt``, ``LanguageData.search_page`` is called
without highlights and with them (relevance order, first page), each pass over all queries
timed with ``time.process_time``; the figures are the best of ``--passes`` passes (the result
cache of queries with syntax and the per-worker token table are warm after the first, as in
a worker that has served for a while), plus the first pass (cold), and the highlights' cost
per language. ``--code DIR`` measures the app/ of another checkout over the same bundle (the
highlight's "before").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


def _queries(urls: Path) -> list[tuple[str, str]]:
    out = []
    for line in (urls / "search.txt").read_text().split():
        parts = urlsplit(line)
        out.append((parts.path.split("/")[3], parse_qs(parts.query)["q"][0]))
    return out


def _pass(
    languages: dict[str, Any], queries: list[tuple[str, str]], size: int, hl: bool
) -> dict[str, float]:
    """CPU seconds of one pass, per language."""
    from app.bundle.language import SearchPage

    page = SearchPage()
    spent = dict.fromkeys(languages, 0.0)
    for language, q in queries:
        started = time.process_time()
        languages[language].search_page(q, page, None, 0, size, hl)
        spent[language] += time.process_time() - started
    return spent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--urls", type=Path, required=True, help="a bench corpus's urls/")
    parser.add_argument("--code", type=Path, help="a checkout whose app/ to measure")
    parser.add_argument("--page-size", type=int, default=20)
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str((args.code or Path(__file__).resolve().parent.parent).resolve()))
    from app.bundle.reader import Bundle

    languages = Bundle.load(args.bundle.resolve()).languages
    queries = _queries(args.urls)
    n = len(queries)
    plain, marked = [], []
    for _ in range(args.passes):  # alternated, so that drift hits both alike
        plain.append(_pass(languages, queries, args.page_size, False))
        marked.append(_pass(languages, queries, args.page_size, True))
    best_plain = min(sum(p.values()) for p in plain)
    best_marked = min(sum(m.values()) for m in marked)
    counts = {language: sum(1 for lang, _ in queries if lang == language) for language in languages}
    out = {
        "queries": n,
        "page_size": args.page_size,
        "plain_ms": round(1e3 * best_plain / n, 4),
        "highlight_ms": round(1e3 * best_marked / n, 4),
        "highlights_only_ms": round(1e3 * (best_marked - best_plain) / n, 4),
        "plain_over_highlight": round(best_plain / best_marked, 3),
        "first_pass_highlight_ms": round(1e3 * sum(marked[0].values()) / n, 4),
        # per language, ms a page: highlights only (best pass with, minus best pass without)
        "highlights_only_ms_by_language": {
            language: round(
                1e3
                * (min(m[language] for m in marked) - min(p[language] for p in plain))
                / counts[language],
                4,
            )
            for language in sorted(languages)
            if counts[language]
        },
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
