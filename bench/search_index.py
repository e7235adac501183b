"""Measure build_index and Searcher on a synthetic corpus (not a test; docs/search.md has figures).

PYTHONPATH=. python bench/search_index.py N LANGS             # random-vocabulary corpus
PYTHONPATH=. python bench/search_index.py N LANGS CORPUS_DIR  # <lang>.jsonl (bench/gen_corpus.py)
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
from pathlib import Path

from app.search.indexer import IndexDoc, build_index
from app.search.searcher import Searcher
from tests.search.corpus import load_jsonl

LATIN = "abcdefghijklmnopqrstuvwxyzéèàüöäñ"
HAN = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
KANA = [chr(c) for c in range(0x3041, 0x3094)]
HANGUL = [chr(c) for c in range(0xAC00, 0xAC00 + 1500)]


def vocabulary(rng: random.Random, language: str, size: int = 20000) -> list[str]:
    # Zipf-like reuse comes from sampling with weights below; the words themselves are random.
    if language in ("ja", "zh_cn", "zh_tw"):
        alphabet = HAN + KANA if language == "ja" else HAN
        return ["".join(rng.choices(alphabet, k=rng.randint(1, 4))) for _ in range(size)]
    if language == "ko":
        return ["".join(rng.choices(HANGUL, k=rng.randint(1, 4))) for _ in range(size)]
    return ["".join(rng.choices(LATIN, k=rng.randint(2, 10))) for _ in range(size)]


def corpus(language: str, n: int, body_chars: int = 3000) -> list[IndexDoc]:
    rng = random.Random(42)
    vocab = vocabulary(rng, language)
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    sep = "" if language in ("ja", "zh_cn", "zh_tw") else " "

    def text(chars: int) -> str:
        out: list[str] = []
        size = 0
        while size < chars:
            words = rng.choices(vocab, weights, k=64)
            chunk = sep.join(words) + ("。" if not sep else ". ")
            out.append(chunk)
            size += len(chunk)
        return "".join(out)[:chars]

    return [
        IndexDoc(text(60), text(200), text(body_chars), tuple(rng.sample(vocab[:500], 3)))
        for _ in range(n)
    ]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    languages = sys.argv[2].split(",") if len(sys.argv) > 2 else ["en", "fr", "ja", "ko", "zh_tw"]
    source = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    for language in languages:
        if source is None:
            docs = corpus(language, n)
        else:
            docs = [a.index_doc() for a in load_jsonl(source / f"{language}.jsonl")][:n]
            n = len(docs)
        gc.collect()
        start = time.perf_counter()
        files = build_index(language, docs)
        built = time.perf_counter() - start
        size = sum(len(v) for v in files.values())
        start = time.perf_counter()
        searcher = Searcher(language, {k: memoryview(v) for k, v in files.items()})
        opened = time.perf_counter() - start
        rng = random.Random(7)
        queries = [docs[rng.randrange(n)].title[:12] for _ in range(200)]
        times = []
        for q in queries:
            t = time.perf_counter()
            searcher.search(q.strip() or "x", 0, 20)
            times.append(time.perf_counter() - t)
        times.sort()
        print(
            f"{language}: {n} docs build {built:.2f}s index {size / 1e6:.1f} MB "
            f"open {opened * 1000:.2f} ms query p50 {statistics.median(times) * 1000:.2f} ms "
            f"p99 {times[int(len(times) * 0.99)] * 1000:.2f} ms"
        )


if __name__ == "__main__":
    main()
