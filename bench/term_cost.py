"""Cost of the moderation term lists (app/comments/terms.py): verdicts, reloads, memory.

    flock /tmp/bench.lock .venv/bin/python bench/term_cost.py [--terms 10000] [--passes 7]
        [--create sqlite|postgres|none] [--compare-pyahocorasick] [--json PATH]

Per language, ``--terms`` banned and as many suspect terms are generated (seeded, so every run
has the same lists): Latin words of 5 to 10 letters drawn with the letter frequencies of the
language's sample articles (data/sample), one in ten a prefix term (7 to 10 letters and a
``*``) and one in ten two words;
CJK terms of 3 to 5 characters drawn from the characters of its articles. The comments are
slices of 200, 500, 1,000 and 2,000 characters of the same articles (64 per language), each
with a short author name; ``TermLists.verdict(language, author, content)`` is timed with the
lists and without them (no directory, and a directory without files), best of ``--passes``
passes (``time.perf_counter``), in µs per verdict. Loading: the whole directory (nine
languages) once, with the memory it adds to the process (RSS: the automata live in Rust's
allocator, which tracemalloc does not see; tracemalloc, over a second load, gives the Python
objects), then one language's reload after its file changed (best of three).

``--create`` also times the in-process create of the same comments (the comment routes on a
bare Falcon app, as tests/comments/conftest.py builds it) on SQLite or on PostgreSQL at
127.0.0.1:5432 (a scratch database, dropped afterwards), to set the verdict against the work
it is added to. The create path does not call the matcher yet: the ratio is create plus
verdict over create.

``--compare-pyahocorasick`` (needs ``pip install pyahocorasick==2.3.1`` in the venv; not a
project dependency) times the automaton scan alone, on the same prepared texts and keys, with
pyahocorasick against ahocorasick_rs: the measurement behind the choice of the latter.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.comments.terms import TermLists  # noqa: E402
from app.languages import LANGUAGES  # noqa: E402
from app.search.analyzers import CJK_LANGUAGES  # noqa: E402

LENGTHS = (200, 500, 1000, 2000)
COMMENTS_PER_LANGUAGE = 64
AUTHORS = ("Mina", "Jean-Luc", "김지수", "さくら", "王小明", "Zoë", "Ángel", "Jürgen")


def _articles(language: str) -> str:
    lines = (ROOT / "data" / "sample" / f"{language}.jsonl").read_text("utf-8").splitlines()
    return "\n\n".join(json.loads(line)["content"] for line in lines if line.strip())


def _comments(language: str, rng: random.Random) -> list[tuple[str, str]]:
    text = _articles(language)
    out = []
    for n in range(COMMENTS_PER_LANGUAGE):
        length = LENGTHS[n % len(LENGTHS)]
        start = rng.randrange(0, max(1, len(text) - length))
        out.append((AUTHORS[n % len(AUTHORS)], text[start : start + length]))
    return out


def _terms(language: str, count: int, rng: random.Random) -> list[str]:
    """`count` distinct plausible terms in the language's script: Latin words with the
    letter frequencies of the language's articles, CJK terms of characters of its articles
    (each distinct character alike, so that a term is rarely a sequence of the text)."""
    text = _articles(language).lower()
    if language in CJK_LANGUAGES:
        alphabet = sorted({c for c in text if c.isalpha() and not c.isascii()})
        weights = [1] * len(alphabet)
    else:
        letters = Counter(c for c in text if c.isalpha())
        alphabet, weights = list(letters), list(letters.values())
    terms: set[str] = set()

    def word(low: int, high: int) -> str:
        return "".join(rng.choices(alphabet, weights, k=rng.randint(low, high)))

    while len(terms) < count:
        if language in CJK_LANGUAGES:
            terms.add(word(3, 5))
            continue
        term = word(5, 10)
        roll = rng.random()
        if roll < 0.1:
            term = word(7, 10) + "*"
        elif roll < 0.2:
            term += " " + word(3, 8)
        terms.add(term)
    return sorted(terms)


def _write_lists(directory: Path, count: int) -> None:
    for language in LANGUAGES:
        rng = random.Random(f"terms-{language}")
        both = _terms(language, 2 * count, rng)
        rng.shuffle(both)
        for kind, part in (("banned", both[:count]), ("suspect", both[count:])):
            path = directory / f"{language}.{kind}"
            path.write_text(f"# {kind} ({count} generated terms)\n" + "\n".join(part) + "\n")


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _time_verdicts(lists: TermLists, language: str, comments: list, passes: int) -> list[float]:
    """µs per verdict, per comment: the best of `passes` passes."""
    best = [float("inf")] * len(comments)
    reps = 20
    for _ in range(passes):
        for i, (author, content) in enumerate(comments):
            started = time.perf_counter()
            for _ in range(reps):
                lists.verdict(language, author, content)
            best[i] = min(best[i], (time.perf_counter() - started) / reps * 1e6)
    return best


def _create_cost(kind: str, comments: dict[str, list], passes: int) -> dict[str, float]:
    """In-process µs per create (all languages' comments in turn), best of `passes`."""
    from dataclasses import replace
    from types import SimpleNamespace

    import falcon
    import falcon.testing

    from app import errors
    from app.comments import create_comment_service
    from app.config import Settings
    from app.mount import mount
    from app.routes import ROUTES

    scratch = tempfile.TemporaryDirectory()
    pg_name = None
    if kind == "sqlite":
        dsn = f"sqlite:///{Path(scratch.name) / 'comments.sqlite3'}"
    else:
        import psycopg

        pg_name = f"news_bench_terms_{os.getpid()}"
        admin = "postgresql://postgres@127.0.0.1:5432/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{pg_name}"')
        dsn = f"postgresql://postgres@127.0.0.1:5432/{pg_name}"
    settings = replace(Settings(comments_dsn=dsn), comment_rate_count=10**9)
    service = create_comment_service(settings, lambda language, article_id: True)
    app = falcon.App()
    errors.install(app)
    shared: Any = SimpleNamespace(settings=settings, comments=service)
    mount(app, shared, [route for route in ROUTES if route.tag == "comments"])
    client = falcon.testing.TestClient(app)
    out: dict[str, float] = {}
    try:
        for language, items in comments.items():
            path = f"/api/v1/{language}/articles/bench-article/comments"
            best = float("inf")
            for n in range(passes):
                started = time.perf_counter()
                for i, (author, content) in enumerate(items):
                    # distinct content: the duplicate rule of §12 must not short-cut a create
                    body = {"author": author, "content": f"{content} {n}.{i}"}
                    result = client.simulate_post(path, json=body)
                    assert result.status_code == 201, result.text
                best = min(best, (time.perf_counter() - started) / len(items) * 1e6)
            out[language] = best
    finally:
        service.close()
        scratch.cleanup()
        if pg_name:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
    return out


def _compare_engines(lists: TermLists, comments: dict[str, list], passes: int) -> dict:
    """Scan-only µs per content (2,000-character comments), ahocorasick_rs against
    pyahocorasick, both over the same prepared texts and the same keys."""
    import ahocorasick  # pyahocorasick, installed by hand for this comparison

    from app.comments.terms import prepare

    out = {}
    for language, items in comments.items():
        matcher = lists._matchers[language]
        keys = sorted({line.rstrip("*") for line in _lines_of(lists, language)})
        automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
        for number, key in enumerate(keys):
            automaton.add_word(key, number)
        automaton.make_automaton()
        texts = [prepare(language, c) for _a, c in items if len(c) >= 2000]

        def rs(text: str, matcher: Any = matcher) -> None:
            matcher.automaton.find_matches_as_indexes(text, overlapping=True)

        def py(text: str, automaton: Any = automaton) -> None:
            for _match in automaton.iter(text):
                pass

        row = {}
        for name, scan in (("ahocorasick_rs", rs), ("pyahocorasick", py)):
            best = float("inf")
            for _ in range(passes):
                started = time.perf_counter()
                for text in texts:
                    scan(text)
                best = min(best, (time.perf_counter() - started) / len(texts) * 1e6)
            row[name] = best
        out[language] = row
    return out


def _lines_of(lists: TermLists, language: str) -> list[str]:
    """The language's terms in force, both lists (a prefix term with its "*")."""
    lines = []
    for kind in ("banned", "suspect"):
        state = lists._files.get((language, kind))
        if state is not None and state.terms:
            lines += state.terms.split("\n")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terms", type=int, default=10_000, help="banned and suspect each")
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--create", choices=("sqlite", "postgres", "none"), default="none")
    parser.add_argument("--compare-pyahocorasick", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    comments = {
        language: _comments(language, random.Random(f"comments-{language}"))
        for language in LANGUAGES
    }
    results: dict[str, Any] = {"terms": args.terms, "languages": {}}
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        started = time.perf_counter()
        _write_lists(directory, args.terms)
        generated = time.perf_counter() - started
        file_bytes = sum(p.stat().st_size for p in directory.iterdir())

        gc.collect()
        rss_before = _rss()
        started = time.perf_counter()
        clock = [0.0]
        lists = TermLists(directory, check_seconds=1.0, clock=lambda: clock[0])
        load_ms = (time.perf_counter() - started) * 1000
        gc.collect()
        rss_after = _rss()
        tracemalloc.start()  # a second load, for its Python objects (tracemalloc slows it)
        second = TermLists(directory)
        held, _peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del second
        results["load"] = {
            "languages": len(LANGUAGES),
            "file_bytes": file_bytes,
            "ms": load_ms,
            "python_bytes": held,
            "rss_bytes": rss_after - rss_before,
            "sizes": lists.sizes(),
        }

        none = TermLists(None)
        empty_dir = tempfile.TemporaryDirectory()
        empty = TermLists(Path(empty_dir.name), clock=lambda: 0.0)
        for language in LANGUAGES:
            items = comments[language]
            # one language's reload: its banned file changed (same terms, a new mtime)
            reloads = []
            for _ in range(3):
                path = directory / f"{language}.banned"
                mtime = path.stat().st_mtime_ns + 10**9
                os.utime(path, ns=(mtime, mtime))
                clock[0] += 1.0
                started = time.perf_counter()
                lists.verdict(language, "x")
                reloads.append((time.perf_counter() - started) * 1000)
            clock[0] += 0.5  # inside the interval: no stat during the timed verdicts
            verdicts = Counter(str(lists.verdict(language, *item)) for item in items)
            with_lists = _time_verdicts(lists, language, items, args.passes)
            without = _time_verdicts(none, language, items, args.passes)
            no_files = _time_verdicts(empty, language, items, args.passes)
            long = [t for t, (_a, c) in zip(with_lists, items, strict=True) if len(c) >= 2000]
            clean = [
                t
                for t, item in zip(with_lists, items, strict=True)
                if lists.verdict(language, *item) is None
            ]
            results["languages"][language] = {
                "with_lists_us": statistics.mean(with_lists),
                "with_lists_2000_us": statistics.mean(long),
                "with_lists_clean_us": statistics.mean(clean) if clean else None,
                "with_lists_max_us": max(with_lists),
                "without_us": statistics.mean(without),
                "no_files_us": statistics.mean(no_files),
                "reload_ms": min(reloads),
                "chars": statistics.mean(len(c) for _a, c in items),
                "verdicts": dict(verdicts),
            }
        empty_dir.cleanup()
        if args.compare_pyahocorasick:
            results["engines"] = _compare_engines(lists, comments, args.passes)

    if args.create != "none":
        creates = _create_cost(args.create, comments, max(1, args.passes // 2))
        results["create"] = {"store": args.create, "us": creates}

    _print(results, generated)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _print(results: dict[str, Any], generated: float) -> None:
    load = results["load"]
    print(
        f"lists: {results['terms']:,} banned + {results['terms']:,} suspect per language, "
        f"{load['file_bytes'] / 2**20:.1f} MiB of files (generated in {generated:.1f} s)"
    )
    print(
        f"load of {load['languages']} languages: {load['ms']:.0f} ms, "
        f"RSS +{load['rss_bytes'] / 2**20:.1f} MiB (Python objects "
        f"{load['python_bytes'] / 2**20:.1f} MiB)"
    )
    creates = results.get("create", {}).get("us", {})
    header = "| language | chars | with lists µs | no term found µs | at 2,000 chars µs | max µs "
    header += "| no directory µs "
    header += "| directory, no files µs | reload ms | verdicts |"
    if creates:
        header += f" create µs ({results['create']['store']}) | (create + verdict) / create |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for language, row in results["languages"].items():
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(row["verdicts"].items()))
        line = (
            f"| {language} | {row['chars']:.0f} | {row['with_lists_us']:.1f} "
            f"| {_num(row['with_lists_clean_us'])} "
            f"| {row['with_lists_2000_us']:.1f} | {row['with_lists_max_us']:.1f} "
            f"| {row['without_us']:.2f} | {row['no_files_us']:.2f} | {row['reload_ms']:.0f} "
            f"| {verdicts} |"
        )
        if creates:
            create = creates[language]
            line += f" {create:.0f} | {(create + row['with_lists_us']) / create:.3f} |"
        print(line)
    if "engines" in results:
        print()
        print("| language | ahocorasick_rs µs | pyahocorasick µs | ratio |")
        print("|---|---|---|---|")
        for language, row in results["engines"].items():
            rs, py = row["ahocorasick_rs"], row["pyahocorasick"]
            print(f"| {language} | {rs:.1f} | {py:.1f} | {py / rs:.1f} |")


if __name__ == "__main__":
    unicodedata.is_normalized("NFC", "")  # warm unicodedata's tables outside the timings
    sys.exit(main())
