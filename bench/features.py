"""Throughput of the query features of contract section 7 against plain requests, in one run.

    python bench/features.py [--per-language 10000] [--baseline REV] [--rounds 2] [--docs]

One corpus, one gunicorn configuration (2 sync workers, the production config), wrk
``-t1 -c32``. Two servers:

* ``baseline``: the code of git revision REV (default: the last commit before the query
  features), with a bundle built by its own builder: "today's plain search";
* ``current``: this code and its bundle.

Request groups, each a list of URLs derived from the corpus's benchmark lists
(bench/gen_corpus.py writes ``urls/list.txt`` and ``urls/search.txt``):

* ``list``: plain list pages; ``list-range``: the same pages with ``from``/``to`` (one month,
  a week, a day); ``list-summary``: the same pages with ``fields=summary``;
* ``search`` on the baseline (no facets) and ``search`` on the current code (facets are
  always on); ``search-highlight``: the same queries with ``highlight=true``;
* per script family (latin, cjk, hangul): ``plain``, ``phrase`` (two adjacent words, or a
  four-character run, taken from an article title, quoted) and ``exclusion`` (a plain query
  minus a word of another title).

Rounds alternate the groups so that drift hits them alike; the figures are medians. Targets
(issue: query features): list-range >= 0.9 x list; search with facets >= 0.8 x baseline
search; highlight >= 0.5 x plain search; list-summary >= 2 x list.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import gen_corpus  # noqa: E402
import harness  # noqa: E402
import layouts  # noqa: E402
import sections  # noqa: E402

ROOT = BENCH.parent
BASELINE = "c8474ae"  # main before the query features (docs/api.md §7) and delivery (§8)
FAMILIES = harness.SCRIPT_FAMILIES


def _family(language: str) -> str:
    return next(f for f, langs in FAMILIES.items() if language in langs)


def _titles(corpus: Path) -> dict[str, list[str]]:
    titles: dict[str, list[str]] = {}
    for path in sorted(corpus.glob("*.jsonl")):
        lines = path.read_bytes().splitlines()[:2000]
        titles[path.stem] = [orjson.loads(line)["title"] for line in lines]
    return titles


def _published_range(corpus: Path) -> tuple[datetime, datetime]:
    stamps = []
    with (corpus / "en.jsonl").open("rb") as fh:
        for line in fh:
            stamps.append(orjson.loads(line)["published_at"])
    values = sorted(datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps)
    return values[0], values[-1]


def _with(url: str, extra: str) -> str:
    return url + ("&" if "?" in url else "?") + extra


def _phrase(language: str, title: str, rng: random.Random) -> str | None:
    if _family(language) == "cjk":
        text = "".join(ch for ch in title if ch.isalnum())
        if len(text) < 6:
            return None
        at = rng.randrange(len(text) - 4)
        return f'"{text[at : at + 4]}"'
    words = [w.strip(".,;:!?\"'()") for w in title.split()]
    words = [w for w in words if w.isalpha()]
    if len(words) < 3:
        return None
    at = rng.randrange(len(words) - 1)
    return f'"{words[at]} {words[at + 1]}"'


def _excluded_word(language: str, title: str, rng: random.Random) -> str | None:
    if _family(language) == "cjk":
        text = "".join(ch for ch in title if ch.isalnum())
        if len(text) < 3:
            return None
        at = rng.randrange(len(text) - 1)
        return text[at : at + 2]
    words = [w for w in (w.strip(".,;:!?\"'()") for w in title.split()) if w.isalpha()]
    return rng.choice(words) if words else None


def url_groups(corpus: Path, scratch: Path) -> dict[str, Path]:
    """Writes each request group's URL file; returns name -> file."""
    rng = random.Random(7)
    urls = corpus / "urls"
    lists = urls.joinpath("list.txt").read_text().split()
    searches = urls.joinpath("search.txt").read_text().split()
    first, last = _published_range(corpus)
    ranges = []
    for days in (30, 7, 1):
        end = last - timedelta(days=rng.randrange(max(1, (last - first).days - days)))
        start = end - timedelta(days=days)
        ranges.append((start, end))
    groups: dict[str, list[str]] = {
        "list": lists,
        "list-range": [],
        "list-summary": [_with(u, "fields=summary") for u in lists],
        "search": searches,
        "search-highlight": [_with(u, "highlight=true") for u in searches],
    }
    for n, url in enumerate(lists):
        start, end = ranges[n % len(ranges)]
        if n % 2:  # dates and timestamps both
            frm, to = start.date().isoformat(), end.date().isoformat()
        else:
            frm = start.strftime("%Y-%m-%dT%H:%M:%SZ")
            to = end.strftime("%Y-%m-%dT%H:%M:%S+00:00")
        groups["list-range"].append(_with(url, f"from={quote(frm)}&to={quote(to)}"))
    titles = _titles(corpus)
    for url in searches:
        language = url.split("/")[3]
        family = _family(language)
        query = parse_qs(urlsplit(url).query)["q"][0]
        groups.setdefault(f"plain-{family}", []).append(url)
        base = f"/api/v1/{language}/articles/search?q="
        phrase = _phrase(language, rng.choice(titles[language]), rng)
        if phrase:
            groups.setdefault(f"phrase-{family}", []).append(base + quote(phrase))
        excluded = _excluded_word(language, rng.choice(titles[language]), rng)
        if excluded:
            groups.setdefault(f"exclusion-{family}", []).append(
                base + quote(f"{query} -{excluded}")
            )
    files = {}
    for name, group in groups.items():
        files[name] = scratch / f"{name}.txt"
        files[name].write_text("\n".join(group) + "\n")
    return files


def check(port: int, files: dict[str, Path]) -> dict[str, Any]:
    """Every URL answers 200 (a benchmark of errors measures nothing); body bytes per group."""
    out: dict[str, Any] = {}
    for name, path in files.items():
        statuses = harness.prerender(port, path.read_text().split(), None)
        if set(statuses["status"]) != {"200"}:
            raise RuntimeError(f"{name}: {statuses}")
        out[name] = statuses["urls"]
    return out


def body_bytes(port: int, path: Path) -> float:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    sizes = []
    for url in path.read_text().split()[:300]:
        conn.request("GET", url)
        resp = conn.getresponse()
        sizes.append(len(resp.read()))
    conn.close()
    return statistics.mean(sizes)


PLAN: tuple[tuple[str, str], ...] = (
    ("baseline", "search"),
    ("current", "search"),
    ("current", "list"),
    ("current", "list-range"),
    ("current", "list-summary"),
    ("current", "search-highlight"),
)


_SERVERS = {
    "gunicorn": "gunicorn (production config, 2 sync workers)",
    "granian": "granian (the Makefile's GRANIAN_OPTS, 2 workers)",
}


def render(f: dict[str, Any], command: str) -> None:
    s = f["summary"]
    server = f.get("server", "gunicorn")

    def rps(key: str) -> float:
        return float(s[key]["rps_median"])

    targets = [
        ("list with `from`/`to`", "current list-range", "current list", 0.9),
        ("search with facets (always on)", "current search", "baseline search", 0.8),
        ("search with `highlight=true`", "current search-highlight", "current search", 0.5),
        ("`fields=summary` list page", "current list-summary", "current list", 2.0),
    ]
    lines = [
        f"## Query features (9 x {f['per_language']:,}, one run, {server})",
        "",
        f"`{command}`: {_SERVERS[server]}, wrk `-t1 -c32`, "
        f"{f['duration_s']} s per group and round, {f['rounds']} alternating rounds; medians. "
        f"Baseline: git `{f['baseline']}` with its own bundle (no facets).",
        "",
        "| measure | req/s | against | req/s | ratio | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, a, b, target in targets:
        if a not in s:  # highlight=true: measured once the parameter exists (docs/api.md §7)
            lines.append(f"| {label} | not measured | {b} | | | >= {target} | |")
            continue
        ratio = rps(a) / rps(b)
        lines.append(
            f"| {label} | {rps(a):.0f} | {b} | {rps(b):.0f} | {ratio:.2f} | >= {target} "
            f"| {'yes' if ratio >= target else 'no'} |"
        )
    lines += [
        "",
        f"Body bytes per response (mean of the first 300 URLs): list "
        f"{f['bytes']['list']:,.0f}, `fields=summary` {f['bytes']['list-summary']:,.0f} "
        f"({f['bytes']['list-summary'] / f['bytes']['list']:.1%}).",
        "",
        "Search operators by script family (same server, same round):",
        "",
        "| family | plain req/s | phrase req/s | phrase / plain | exclusion req/s "
        "| exclusion / plain |",
        "|---|---|---|---|---|---|",
    ]
    for family in FAMILIES:
        plain = rps(f"current plain-{family}")
        phrase = rps(f"current phrase-{family}")
        excl = rps(f"current exclusion-{family}")
        lines.append(
            f"| {family} | {plain:.0f} | {phrase:.0f} | {phrase / plain:.2f} | {excl:.0f} "
            f"| {excl / plain:.2f} |"
        )
    lines += ["", f"Measured {f['when']}.", ""]
    server = f.get("server", "gunicorn")
    sections.write(
        "query-features" + ("" if server == "gunicorn" else f"-{server}"), "\n".join(lines)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=10_000)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--duration", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--server", choices=("gunicorn", "granian"), default="gunicorn", help="for both codes"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--docs", action="store_true", help="write docs/benchmarks.md")
    parser.add_argument("--render", type=Path, help="only write the docs from this JSON")
    args = parser.parse_args(argv)
    command = " ".join(["python bench/features.py", *(argv if argv is not None else sys.argv[1:])])
    if args.render:
        render(json.loads(args.render.read_text()), command)
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="news-features-"))
    corpus = args.corpus or scratch / "corpus"
    if not (corpus / "urls" / "list.txt").is_file():
        gen_corpus.generate(corpus, args.per_language, 1)
    old_code = scratch / "baseline-code"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(old_code), args.baseline],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    procs: dict[str, Any] = {}
    try:
        src = scratch / "src"
        src.mkdir()
        for path in corpus.glob("*.jsonl"):
            (src / path.name).symlink_to(path.resolve())
        bundles = {"baseline": scratch / "b-baseline", "current": scratch / "b-current"}
        layouts.build(old_code, src, bundles["baseline"])
        layouts.build(ROOT, src, bundles["current"])
        files = url_groups(corpus, scratch)
        for name, code in (("baseline", old_code), ("current", ROOT)):
            procs[name] = layouts.serve(code, bundles[name], scratch, args.server)
        check(procs["current"][1], files)
        check(procs["baseline"][1], {"search": files["search"]})
        plan = list(PLAN) + [
            ("current", f"{kind}-{family}")
            for family in FAMILIES
            for kind in ("plain", "phrase", "exclusion")
        ]
        opts = SimpleNamespace(connections=32)
        for _, port in procs.values():
            harness.wrk(port, files["list"], 3, opts.connections)  # warm workers, page cache
        results: dict[str, list[dict[str, Any]]] = {}
        for round_ in range(args.rounds):
            for server, group in plan:
                port = procs[server][1]
                result = harness.wrk(port, files[group], args.duration, opts.connections)
                if result["http_errors"]:
                    raise RuntimeError(f"{server} {group}: {result['http_errors']} errors")
                results.setdefault(f"{server} {group}", []).append(result)
                harness.log(
                    f"round {round_ + 1} {server:8s} {group:22s} {result['rps']:9.1f} req/s"
                    f"  p99 {result['p99_ms']:.2f} ms"
                )
        summary = {
            key: {
                "rps_median": round(statistics.median(r["rps"] for r in runs), 1),
                "p99_ms_median": round(statistics.median(r["p99_ms"] for r in runs), 2),
                "rps": [round(r["rps"], 1) for r in runs],
            }
            for key, runs in results.items()
        }
        port = procs["current"][1]
        figures = {
            "per_language": args.per_language,
            "baseline": args.baseline,
            "duration_s": args.duration,
            "rounds": args.rounds,
            "server": args.server,
            "summary": summary,
            "bytes": {g: body_bytes(port, files[g]) for g in ("list", "list-summary")},
            "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        }
        print(json.dumps(figures, indent=2))
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        if args.docs:
            render(figures, command)
    finally:
        for proc, _ in procs.values():
            harness.stop(proc)
        subprocess.run(["git", "worktree", "remove", "--force", str(old_code)], cwd=ROOT)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
