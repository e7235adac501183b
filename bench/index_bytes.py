"""Search index bytes per language against the source bytes of the same articles.

    python bench/index_bytes.py [--per-language 1000] [--languages ko ja zh_tw en]

Generates the benchmark corpus's articles (bench/gen_corpus.py, deterministic), builds each
language's search index in process with the ``app`` package first on the import path (run
it with ``PYTHONPATH=<other checkout>`` to measure another version's builder), and prints
JSON: per language the source bytes (the articles as JSON lines), the index bytes (every
``search.*`` file) and the CPU seconds of build_index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import gen_corpus  # noqa: E402

from app.search.indexer import IndexDoc, build_index  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=1000)
    parser.add_argument("--languages", nargs="+", default=["ko", "ja", "zh_tw", "en"])
    args = parser.parse_args(argv)
    out = {}
    for language in args.languages:
        articles = list(gen_corpus.generate_language(language, args.per_language, 1))
        source = sum(len(orjson.dumps(a)) + 1 for a in articles)
        docs = [
            IndexDoc(a["title"], a["summary"], a["content"], tuple(a.get("tags") or ()))
            for a in articles
        ]
        started = time.process_time()
        files = build_index(language, docs)
        seconds = time.process_time() - started
        out[language] = {
            "source_bytes": source,
            "index_bytes": sum(map(len, files.values())),
            "build_cpu_s": round(seconds, 2),
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
