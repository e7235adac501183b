"""Cost of hostile search queries against plain search, on English articles whose words
follow Zipf's law (as real text does), in process and through one server worker.

    python bench/search_cost.py [--articles 5000] [--scratch DIR] [--repeat 3]
        [--http] [--server gunicorn|granian] [--json OUT] [--docs] [--prepare] [--render JSON]

With ``SEARCH_COST_CODE=DIR`` the code of DIR (its app/ and scripts/) builds its own bundle
of the same corpus and is measured, for a before/after comparison in one run.

(``--prepare`` only writes the corpus and builds the bundle: run it outside the benchmark
lock, then the timed run under ``flock /tmp/bench.lock``.)

Writes ``--articles`` generated English articles (title 8 words, summary 40, body 450 in
five paragraphs; word rank r drawn with probability proportional to 1/r over 30,000 words,
the most frequent being the real English function words), builds the bundle with this
checkout's builder, then times each query of the hostile set (docs/search.md "Cost
model"): an OR of two-word phrases of the most frequent words (as many as the 200-character
and 8-phrase limits allow), an AND of such phrases, a 30-word phrase of frequent words,
many exclusions (words, then phrases), each also with ``highlight=true&page_size=100``;
beside plain one- and two-word searches and two-word phrases holding a stopword.

In process: the best of ``--repeat`` runs of each query (process CPU time, the machine being
shared) with the search result cache emptied before each run (cold: the cost of a query
that is new each time), and a repeated query (served from the cache). With ``--http``: the
same through one worker of ``--server`` (``WEB_CONCURRENCY=1`` with the production gunicorn
config, or granian with the Makefile's options and ``--workers 1``), wall time of the best
of ``--repeat`` requests after a warm-up; each request of a query with syntax excludes one
more word that no article holds (``-q17``: a failed lookup), so it is new to the cache.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
# The code measured: this checkout, or another one (SEARCH_COST_CODE=DIR, holding app/ and
# scripts/, e.g. from `git archive REV app scripts`) for a before/after comparison.
CODE = Path(os.environ.get("SEARCH_COST_CODE", ROOT)).resolve()
sys.path.insert(0, str(CODE))
sys.path.insert(0, str(BENCH))
import harness  # noqa: E402
import sections  # noqa: E402

from app.bundle.language import SearchPage  # noqa: E402
from app.bundle.reader import Bundle  # noqa: E402
from app.search.query import is_plain  # noqa: E402

PHRASE_LIMIT = 8  # docs/api.md section 7: more quoted phrases are a 422

FUNCTION_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "been",
    "one",
    "all",
    "we",
    "their",
    "has",
    "would",
    "when",
    "if",
    "so",
    "no",
    "will",
    "more",
    "can",
    "who",
    "out",
    "said",
    "up",
    "about",
    "its",
    "than",
    "into",
    "them",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "first",
    "then",
    "do",
    "any",
    "like",
    "my",
    "now",
    "over",
    "such",
    "our",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
]
VOCABULARY = 30_000
SYLLABLES = [
    "ba",
    "be",
    "bi",
    "bo",
    "bu",
    "da",
    "de",
    "di",
    "do",
    "du",
    "ka",
    "ke",
    "ki",
    "ko",
    "ku",
    "la",
    "le",
    "li",
    "lo",
    "lu",
    "ma",
    "me",
    "mi",
    "mo",
    "mu",
]


def vocabulary() -> list[str]:
    words = list(FUNCTION_WORDS)
    seen = set(words)
    rng = random.Random(7)
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def corpus(n: int, seed: int) -> list[dict[str, Any]]:
    words = np.array(vocabulary())
    cdf = np.cumsum(1.0 / np.arange(1, VOCABULARY + 1))
    cdf /= cdf[-1]
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def text(count: int, sentence: int = 15) -> str:
        drawn = words[np.searchsorted(cdf, rng.random(count), side="right")].tolist()
        return " ".join(
            " ".join(drawn[i : i + sentence]).capitalize() + "." for i in range(0, count, sentence)
        )

    out = []
    for i in range(n):
        body = "\n\n".join(text(90) for _ in range(5))
        out.append(
            {
                "id": f"z{i:06d}",
                "language": "en",
                "title": text(8, 8).rstrip("."),
                "summary": text(40),
                "content": body,
                "category": ("politics", "economy", "science", "sports")[i % 4],
                "tags": [],
                "published_at": (start + timedelta(minutes=37 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )
    return out


def hostile_queries(
    ranked: list[str] = FUNCTION_WORDS, listed: int = 41, sep: str = " "
) -> dict[str, str]:
    """The hostile set: every query is at most 200 characters (the contract's limit).
    ``ranked``: the language's words, most frequent first, the first ``listed`` of them
    those whose pairs the index posts (app/search/analyzers.py FREQUENT_WORDS: the first 41
    of FUNCTION_WORDS); ``sep`` joins the words of a phrase."""
    top = ranked[:24]
    pairs = [f'"{top[i]}{sep}{top[(i * 7 + 3) % len(top)]}"' for i in range(len(top))]
    # The most frequent words outside that list: proven from positions.
    beyond = ranked[listed : listed + 24]
    next_pairs = [f'"{beyond[i]}{sep}{beyond[(i * 7 + 3) % len(beyond)]}"' for i in range(24)]

    def fill(parts: list[str], joiner: str) -> str:
        """Parts joined while the query keeps within 200 - 8 characters (room for the
        benchmark's ``-qN``) and PHRASE_LIMIT phrases."""
        q = parts[0]
        for part in parts[1:]:
            longer = q + joiner + part
            if len(longer) > 192 or longer.count('"') // 2 > PHRASE_LIMIT:
                break
            q = longer
        return q

    thirty = sep.join(ranked[i % 12] for i in range(30))
    thirty = '"' + (thirty if len(thirty) <= 190 else thirty[:190].rsplit(" ", 1)[0]) + '"'
    first = ranked[0]
    return {
        "or-of-phrases": fill(pairs, " OR "),
        "or-of-phrases-beyond-list": fill(next_pairs, " OR "),
        "and-of-phrases": fill(pairs, " "),
        "30-word-phrase": thirty,
        "exclusions": fill([first] + [f"-{w}" for w in ranked[1:]], " "),
        "phrase-exclusions": fill([first] + [f"-{p}" for p in pairs], " "),
        "phrase-exclusions-beyond-list": fill([first] + [f"-{p}" for p in next_pairs], " "),
    }


def plain_queries(
    words: list[str] | None = None, function_words: list[str] = FUNCTION_WORDS, sep: str = " "
) -> dict[str, list[str]]:
    """Plain one- and two-word queries of mid-frequency words (ranks 100-2,000 of
    ``words``) and of the 20 most frequent (the costliest plain queries: they match nearly
    every article), and two-word phrases of a mid-frequency word and a most frequent one."""
    words = words or vocabulary()
    rng = random.Random(3)
    mid = words[100:2000]
    top = function_words[:20]
    return {
        "plain": [rng.choice(mid) for _ in range(20)]
        + [f"{rng.choice(mid)} {rng.choice(mid)}" for _ in range(20)],
        "plain-frequent": [rng.choice(top) for _ in range(20)]
        + [f"{rng.choice(top)} {rng.choice(top)}" for _ in range(20)],
        "stopword-phrase": [f'"{rng.choice(top)}{sep}{rng.choice(mid)}"' for _ in range(20)]
        + [f'"{rng.choice(mid)}{sep}{rng.choice(top)}"' for _ in range(20)],
    }


CJK = ("ja", "zh_cn", "zh_tw")  # words run together: their "words" are frequent 2-character runs


def ranked_words(src: Path, language: str, sample: int = 3000) -> list[str]:
    """A language's words in ``sample`` of its source articles, most frequent first."""
    counts: dict[str, int] = {}
    with (src / f"{language}.jsonl").open("rb") as fh:
        for _, line in zip(range(sample), fh, strict=False):
            article = orjson.loads(line)
            text = " ".join((article["title"], article["summary"], article["content"])).lower()
            if language in CJK:
                tokens = [
                    run[i : i + 2] for run in re.findall(r"\w+", text) for i in range(len(run) - 1)
                ]
            else:
                tokens = re.findall(r"\w+", text)
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))


def pair_listed_first(bundle: Path, language: str, ranked: list[str]) -> tuple[list[str], int]:
    """``ranked`` with the words whose pairs the bundle posts moved to the front (in rank
    order), and how many those are: the index's own pair words (search.meta ``pair_words``,
    app/search/pair_words.py; Korean: runs)."""
    from app.search.analyzers import get_analyzer, normalize
    from app.search.query import _words_in_order

    meta = Bundle.load(bundle).languages[language].segments[0].search_meta()
    analyzer = get_analyzer(language)
    # Every index this code loads has its own (app.search.layout.SearchMeta: format 7 on).
    stems = set(meta.pair_words)
    if not stems:
        return ranked, 0
    if analyzer.cjk:  # Korean: listed runs, as typed
        front = [w for w in ranked if normalize(w) in stems]
    else:
        front = [w for w in ranked if set(_words_in_order(analyzer, w)) <= stems]
    chosen = set(front)
    return front + [w for w in ranked if w not in chosen], len(front)


def languages_in_process(bundle: Path, src: Path, repeat: int) -> dict[str, Any]:
    """The hostile set and plain queries of each language of an existing bundle, made
    from that language's own words (ranked_words), in process."""
    out: dict[str, Any] = {}
    for language in sorted(p.stem for p in src.glob("*.jsonl")):
        by_frequency = ranked_words(src, language)
        ranked, listed = pair_listed_first(bundle, language, by_frequency)
        # CJK phrases of 2-character runs apart (the "whitespace aside" of docs/search.md).
        hostile = hostile_queries(ranked, listed or 24)
        # The plain baselines by frequency alone, whatever the index lists.
        plain = plain_queries(by_frequency, by_frequency[:20])
        out[language] = in_process(bundle, repeat, language, hostile, plain)
        out[language]["source_bytes"] = (src / f"{language}.jsonl").stat().st_size
        print(language, json.dumps(summary(out[language])), flush=True)
    return out


def summary(result: dict[str, Any]) -> dict[str, float]:
    worst = max(max(r["ms"], r["ms_highlight_100"]) for r in result["hostile"].values())
    worst_plain = max(r["ms"] for r in result["hostile"].values())
    plain = result["plain"]["plain"]
    frequent = result["plain"].get("plain-frequent")
    out = {
        "worst_ms": worst,
        "worst_no_highlight_ms": worst_plain,
        "plain_ms": plain["ms_mean"],
        "plain_highlight_ms": plain["ms_mean_highlight"],
        "ratio": worst / plain["ms_mean"],
        "ratio_no_highlight": worst_plain / plain["ms_mean"],
    }
    if frequent is not None:
        # Against the costliest plain queries, each with the same page as the hostile one.
        out["ratio_frequent"] = max(
            max(
                r["ms"] / frequent["ms_mean"],
                r["ms_highlight_100"] / frequent["ms_mean_highlight_100"],
            )
            for r in result["hostile"].values()
        )
    return out


def build(src: Path, out: Path) -> None:
    subprocess.run(
        [sys.executable, "scripts/build_bundles.py", "--src", str(src), "--out", str(out)],
        cwd=CODE,
        env={**os.environ, "PYTHONPATH": str(CODE)},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def in_process(
    bundle: Path,
    repeat: int,
    language: str = "en",
    hostile: dict[str, str] | None = None,
    plain: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    data = Bundle.load(bundle).languages[language]
    page = SearchPage(order="relevance", first=None, last=None)

    def once(q: str, highlight: bool, size: int, cold: bool) -> float:
        if cold:
            getattr(data, "clear_search_cache", lambda: None)()  # older code: no cache
        started = time.process_time()  # CPU time: other processes share this machine
        data.search_page(q, page, None, 0, size, highlight)
        return time.process_time() - started

    def best(q: str, highlight: bool = False, size: int = 20, cold: bool = True) -> float:
        once(q, highlight, size, cold)  # warm the pages and the stemmer
        return min(once(q, highlight, size, cold) for _ in range(repeat)) * 1000

    out: dict[str, Any] = {"hostile": {}, "plain": {}}
    if hostile is None:
        # Zipf mode: the vocabulary is in rank order.
        hostile = hostile_queries(*pair_listed_first(bundle, language, vocabulary()[:400]))
    for name, q in hostile.items():
        out["hostile"][name] = {
            "q": q,
            "chars": len(q),
            "ms": best(q),
            "ms_highlight_100": best(q, True, 100),
            "ms_cached": best(q, cold=False),
        }
    for name, qs in (plain or plain_queries()).items():
        out["plain"][name] = {
            "ms_mean": float(np.mean([best(q) for q in qs])),
            "ms_mean_highlight": float(np.mean([best(q, True) for q in qs])),
            "ms_mean_highlight_100": float(np.mean([best(q, True, 100) for q in qs])),
            "queries": len(qs),
        }
    return out


def _get(port: int, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.perf_counter()
    conn.request("GET", path)
    reply = conn.getresponse()
    reply.read()
    elapsed = time.perf_counter() - started
    conn.close()
    if reply.status != 200:
        raise RuntimeError(f"{path}: {reply.status}")
    return elapsed * 1000


def over_http(bundle: Path, scratch: Path, repeat: int, server: str) -> dict[str, Any]:
    port = harness.free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(CODE),
        "NEWS_BUNDLE_DIR": str(bundle),
        "NEWS_BIND": f"127.0.0.1:{port}",
        "NEWS_COMMENTS_DSN": f"sqlite:///{scratch / 'comments.sqlite3'}",
        "WEB_CONCURRENCY": "1",
        "NEWS_LOG_LEVEL": "warning",
    }
    command = [str(ROOT / ".venv" / "bin" / "gunicorn"), "-c", "app/gunicorn_conf.py"]
    if server == "granian":
        command = [
            str(ROOT / ".venv" / "bin" / "granian"),
            *harness.GRANIAN_OPTS,
            *["--no-access-log", "--workers", "1", "--host", "127.0.0.1", "--port", str(port)],
        ]
    with (scratch / f"{server}.log").open("wb") as log:
        # From the code's own directory: gunicorn puts its working directory on sys.path.
        proc = subprocess.Popen(
            [*command, "app.wsgi:app"],
            cwd=CODE,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    unique = iter(range(10**6))
    try:
        harness.wait_ready(port, proc, "/ready")

        def best(q: str, extra: str = "") -> float:
            times = []
            for _ in range(repeat + 1):
                varied = q if is_plain(q) else f"{q} -q{next(unique)}"
                times.append(_get(port, f"/api/v1/en/articles/search?q={quote(varied)}{extra}"))
            return min(times[1:])

        out: dict[str, Any] = {"hostile": {}, "plain": {}}
        for name, q in hostile_queries().items():
            out["hostile"][name] = {
                "ms": best(q),
                "ms_highlight_100": best(q, "&highlight=true&page_size=100"),
            }
        for name, qs in plain_queries().items():
            out["plain"][name] = {
                "ms_mean": float(np.mean([best(q) for q in qs])),
                "ms_mean_highlight": float(np.mean([best(q, "&highlight=true") for q in qs])),
            }
        return out
    finally:
        harness.stop(proc)


def render(result: dict[str, Any], command: str) -> str:
    lines = [
        f"## Search cost: hostile queries ({result['articles']:,} Zipf English articles"
        + (f", {result['server']}" if "server" in result else "")
        + (
            f", code {result['code']})"
            if result.get("code", "this checkout") != "this checkout"
            else ")"
        ),
        "",
        f"`{command}`: best of {result['repeat']} runs per query, cold (result cache",
        "emptied); in process (`LanguageData.search_page`, page of 20; process CPU time, as",
        "the machine is shared) and, where measured, through one worker of the server (wall",
        "time of a request; each request of a query with syntax excludes one more absent word,",
        "so it is never served from the cache). Plain: mean of 40 one- and two-word queries of",
        "mid-frequency words.",
        "",
        "| query | chars | in process ms | with highlight, page_size=100 | cached | HTTP ms "
        "| HTTP with highlight, 100 |",
        "|---|---|---|---|---|---|---|",
    ]
    http = result.get("http", {}).get("hostile", {})
    for name, row in result["in_process"]["hostile"].items():
        h = http.get(name, {})
        lines.append(
            f"| {name} | {row['chars']} | {row['ms']:.2f} | {row['ms_highlight_100']:.2f} "
            f"| {row['ms_cached']:.3f} | {h.get('ms', float('nan')):.2f} "
            f"| {h.get('ms_highlight_100', float('nan')):.2f} |"
        )
    plain = result["in_process"]["plain"]
    lines += ["", "| group | in process ms (mean) | with highlight | HTTP ms | HTTP highlight |"]
    lines.append("|---|---|---|---|---|")
    hp = result.get("http", {}).get("plain", {})
    for name, row in plain.items():
        h = hp.get(name, {})
        lines.append(
            f"| {name} | {row['ms_mean']:.3f} | {row['ms_mean_highlight']:.3f} "
            f"| {h.get('ms_mean', float('nan')):.2f} "
            f"| {h.get('ms_mean_highlight', float('nan')):.2f} |"
        )
    worst = max(
        max(r["ms"], r["ms_highlight_100"]) for r in result["in_process"]["hostile"].values()
    )
    sums = summary(result["in_process"])
    lines += [
        "",
        f"Worst hostile query in process: {worst:.1f} ms, "
        f"{worst / plain['plain']['ms_mean']:.1f} x plain search of mid-frequency words, "
        f"{sums.get('ratio_frequent', float('nan')):.1f} x plain search of the most frequent "
        "words (largest ratio of a hostile query to them, same page and highlight). "
        f"Bundle {result['bundle_bytes']:,} B for {result['source_bytes']:,} B of source "
        f"({result['bundle_bytes'] / result['source_bytes']:.2f} x). "
        f"Measured {result['measured']}.",
    ]
    return "\n".join(lines) + "\n"


def render_languages(result: dict[str, Any], command: str) -> str:
    rows = result["languages"]
    lines = [
        f"## Search cost: hostile queries per language ({result['articles']:,} articles each)",
        "",
        f"`{command}`: the hostile set and 40 plain queries of each language, made from its",
        "own words (the most frequent in 3,000 of its articles; ja/zh: 2-character runs),",
        f"against the existing bundle; in process, best of {result['repeat']} runs, cold.",
        "Worst: of the set with and without `highlight=true&page_size=100`; plain: mean of",
        "the plain queries of mid-frequency words (page of 20; in brackets with",
        "`highlight=true&page_size=100`); frequent: mean of the plain queries of the 20 most",
        "frequent words, the costliest plain queries (the last column: the largest ratio of a",
        "hostile query to them, each with the same page and highlight).",
        "",
        "| language | worst ms | worst without highlight ms (query) | plain ms | worst / plain "
        "| without highlight / plain | worst / plain with the same highlight "
        "| frequent ms | worst / frequent |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for language, row in rows.items():
        sums = summary(row)
        worst_name = max(row["hostile"], key=lambda n: row["hostile"][n]["ms"])
        plain = row["plain"]["plain"]
        lines.append(
            f"| {language} | {sums['worst_ms']:.1f} | {sums['worst_no_highlight_ms']:.1f} "
            f"({worst_name}) | {plain['ms_mean']:.3f} ({plain['ms_mean_highlight_100']:.2f}) "
            f"| {sums['ratio']:.0f} x | {sums['ratio_no_highlight']:.0f} x "
            f"| {sums['worst_ms'] / plain['ms_mean_highlight_100']:.1f} x "
            f"| {row['plain'].get('plain-frequent', {}).get('ms_mean', float('nan')):.2f} "
            f"| {sums.get('ratio_frequent', float('nan')):.1f} x |"
        )
    source = sum(row["source_bytes"] for row in rows.values())
    lines += [
        "",
        f"Bundle {result['bundle_bytes']:,} B for {source:,} B of source "
        f"({result['bundle_bytes'] / source:.2f} x). Measured {result['measured']}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/search-cost"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--server", choices=("gunicorn", "granian"), default="gunicorn")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--docs", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--prepare", action="store_true", help="only write the corpus and build the bundle"
    )
    parser.add_argument("--render", type=Path, help="only write the docs from this JSON")
    parser.add_argument(
        "--bundle", type=Path, help="an existing bundle: every language's own hostile set"
    )
    parser.add_argument("--src", type=Path, help="the --bundle's source directory")
    args = parser.parse_args(argv)
    command = "python " + " ".join(["bench/search_cost.py", *(argv or sys.argv[1:])])
    if args.bundle:
        if not args.src:
            parser.error("--bundle needs --src")
        result = {
            "articles": args.articles,
            "repeat": args.repeat,
            "bundle_bytes": sum(p.stat().st_size for p in args.bundle.rglob("*") if p.is_file()),
            "languages": languages_in_process(args.bundle, args.src, args.repeat),
            "measured": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
            "command": command,
        }
        text = render_languages(result, command)
        print(text)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n")
        if args.docs:
            sections.write(f"search-cost-languages-{args.articles}", text)
        return 0
    if args.render:
        result = json.loads(args.render.read_text())
        command = result.get("command", "python bench/search_cost.py")
        if "languages" in result:
            sections.write(
                f"search-cost-languages-{result['articles']}", render_languages(result, command)
            )
            return 0
        name = "search-cost" + (f"-{result['server']}" if "server" in result else "")
        suffix = "" if result.get("code", "this checkout") == "this checkout" else "-before"
        sections.write(f"{name}-{result['articles']}{suffix}", render(result, command))
        return 0
    scratch = args.scratch / f"zipf-{args.articles}-{args.seed}"
    src = scratch / "src"
    bundle = scratch / ("bundle" if ROOT.resolve() == CODE else f"bundle-{CODE.name}")
    if not (src / "en.jsonl").exists():
        src.mkdir(parents=True, exist_ok=True)
        lines = b"\n".join(orjson.dumps(a) for a in corpus(args.articles, args.seed))
        (src / "en.jsonl").write_bytes(lines + b"\n")
    if not (bundle / "manifest.json").exists():
        build(src, bundle)
    if args.prepare:
        return 0
    result: dict[str, Any] = {
        "code": "this checkout" if ROOT.resolve() == CODE else str(CODE),
        "articles": args.articles,
        "repeat": args.repeat,
        "source_bytes": (src / "en.jsonl").stat().st_size,
        "bundle_bytes": sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()),
        "in_process": in_process(bundle, args.repeat),
        "measured": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
    }
    if args.http:
        result["http"] = over_http(bundle, scratch, args.repeat, args.server)
        result["server"] = args.server
    result["command"] = "python " + " ".join(["bench/search_cost.py", *(argv or sys.argv[1:])])
    text = render(result, result["command"])
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    if args.docs:
        name = "search-cost" + (f"-{args.server}" if args.http else "")
        suffix = "" if ROOT.resolve() == CODE else "-before"
        sections.write(f"{name}-{args.articles}{suffix}", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
