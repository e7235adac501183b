"""The change feed's cost (docs/api.md §13): one page of 1,000 changes against a list page of
100 summaries, in process, and the bundle bytes per change the log keeps.

    flock /tmp/bench.lock .venv/bin/python bench/changes_cost.py --per-language 20000 \\
        --work bench/.cache/changes [--seconds 3] [--rounds 5] [--json FILE]

Builds one language (`en` of bench/gen_corpus.py's corpus) from scratch, then publishes 100
changed articles incrementally (a correction-like edit of each, `--publishes` times), and
calls the WSGI app in process (bench/profile_app.py's `measure`), with the response cache
off so that every request is composed: every list page of 100 summaries (`fields=summary`,
newest and oldest) against every page of 1,000 changes of the initial listing (the cursors
of one walk) and the page of the last 1,000 changes (a poll: retractions and removals among
upserts), rounds alternated, CPU µs per request and the ratio of the medians.
Bytes: the change feed's objects of the language (changes.log, changes.ids, changes.ids.off,
changes.json) over the entries its log keeps, and over the changes it recorded (`head`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from profile_app import environ, measure  # noqa: E402


def corpus(work: Path, per_language: int) -> Path:
    """`en` of the generated corpus, alone in a source directory."""
    generated = work / f"corpus-{per_language}"
    if not (generated / "en.jsonl").exists():
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_corpus.py"),
                "--out",
                str(generated),
                "--per-language",
                str(per_language),
            ],
            check=True,
        )
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    shutil.copy(generated / "en.jsonl", src / "en.jsonl")
    return src


def edit(src: Path, step: int, count: int) -> None:
    """`count` articles of en.jsonl get a new title (a changed line, another ETag)."""
    path = src / "en.jsonl"
    lines = path.read_bytes().splitlines()
    for n in range(count):
        i = (step * count + n * 97) % len(lines)
        record = orjson.loads(lines[i])
        record["title"] = f"{record['title']} ({step})"
        lines[i] = orjson.dumps(record)
    path.write_bytes(b"\n".join(lines) + b"\n")


def retract_and_remove(src: Path, count: int) -> None:
    """`count` articles retracted and `count` lines removed (the first lines of the file)."""
    path = src / "en.jsonl"
    lines = path.read_bytes().splitlines()
    for i in range(count):
        record = orjson.loads(lines[i])
        record["retracted"] = {"at": record["published_at"], "reason": "Withdrawn."}
        lines[i] = orjson.dumps(record)
    del lines[count : 2 * count]
    path.write_bytes(b"\n".join(lines) + b"\n")


def log_bytes(out: Path) -> dict[str, Any]:
    from app.bundle import format as fmt

    manifest = orjson.loads((out / fmt.MANIFEST).read_bytes())
    files = manifest["languages"]["en"]["files"]
    sizes = {
        name: (out / "objects" / files[name]).stat().st_size
        for name in (fmt.CHANGES_LOG, fmt.CHANGES_IDS_BIN, fmt.CHANGES_IDS_OFF, fmt.CHANGES_JSON)
    }
    meta = orjson.loads((out / "objects" / files[fmt.CHANGES_JSON]).read_bytes())
    generation = sum(
        (out / "objects" / obj).stat().st_size
        for name, obj in files.items()
        if not name.startswith("changes.")
    )
    entries = sizes[fmt.CHANGES_LOG] // 16
    total = sum(sizes.values())
    return {
        "sizes": sizes,
        "entries": entries,
        "head": meta["head"],
        "publishes": len(meta["publishes"]),
        "bytes_per_entry": total / max(entries, 1),
        "other_generation_files": generation,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-language", type=int, default=20_000)
    parser.add_argument("--work", type=Path, default=HERE / ".cache" / "changes")
    parser.add_argument("--publishes", type=int, default=3)
    parser.add_argument("--changed", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # The corpus is dated years back: its from-scratch publish (stamped with the newest time
    # in the sources) must not expire at the first publish, or a poll would be a 410.
    os.environ.setdefault("NEWS_CHANGES_RETENTION_DAYS", "36500")

    from app.builder import builder
    from app.config import Settings
    from app.wsgi import create_app

    args.work.mkdir(parents=True, exist_ok=True)
    src = corpus(args.work, args.per_language)
    out = args.work / "bundle"
    if out.exists():
        shutil.rmtree(out)
    started = time.perf_counter()
    builder.build(src, out, jobs=2)
    full_s = time.perf_counter() - started
    bytes_full = log_bytes(out)
    publish_s = []
    for step in range(args.publishes):
        edit(src, step, args.changed)
        started = time.perf_counter()
        builder.build(src, out, jobs=2)
        publish_s.append(time.perf_counter() - started)
    retract_and_remove(src, args.changed // 2)
    started = time.perf_counter()
    builder.build(src, out, jobs=2)
    publish_s.append(time.perf_counter() - started)
    bytes_after = log_bytes(out)

    settings = Settings(
        bundle_dir=out,
        comments_dsn=f"sqlite:///{args.work / 'c.sqlite3'}",
        response_cache_bytes=0,  # every request composed: the cost, not a lookup
    )
    app = create_app(settings)
    # The first page of a bundle in a worker also makes the lists it keeps (ids, times).
    started = time.process_time()
    b"".join(app(environ("/api/v1/en/changes?limit=1000"), lambda s, h, e=None: None))
    first_ms = (time.process_time() - started) * 1000
    lists = [
        f"/api/v1/en/articles?page={p}&page_size=100&fields=summary&order={order}"
        for order in ("newest", "oldest")
        for p in range(1, args.per_language // 100 + 1)
    ]
    pages: list[str] = []
    cursor = None
    while True:  # the cursors of one walk of the initial listing
        url = "/api/v1/en/changes?limit=1000" + (f"&since={cursor}" if cursor else "")
        body = b"".join(app(environ(url), lambda status, headers, exc=None: None))
        answer = orjson.loads(body)
        pages.append(url)
        cursor = answer["next"]
        if not answer["more"]:
            break
    # Polling: the last 1,000 changes, upserts with retractions and removals among them.
    from app.bundle.changes import Cursor
    from app.bundle.reader import Bundle

    log = Bundle.load(out).languages["en"].changes
    position = int(log.seq[max(0, log.seq.size - 1001)])
    poll = Cursor(log.lineage, "en", position).encode()
    polls = [f"/api/v1/en/changes?limit=1000&since={poll}"]
    page_bytes = len(b"".join(app(environ(pages[0]), lambda status, headers, exc=None: None)))
    results: dict[str, list[float]] = {"list": [], "changes": [], "poll": []}
    urls_of = {"list": lists, "changes": pages, "poll": polls}
    for n in range(args.rounds):
        order = ("list", "changes", "poll") if n % 2 == 0 else ("poll", "changes", "list")
        for kind in order:
            results[kind].append(measure(app, urls_of[kind], args.seconds)[0])
    list_us = statistics.median(results["list"])
    changes_us = statistics.median(results["changes"])
    report = {
        "per_language": args.per_language,
        "full_build_s": round(full_s, 2),
        "publish_s": [round(s, 2) for s in publish_s],
        "list_page_100_summaries_us": round(list_us, 1),
        "changes_page_1000_us": round(changes_us, 1),
        "ratio": round(changes_us / list_us, 2),
        "first_page_ms": round(first_ms, 1),
        "poll_page_1000_mixed_us": round(statistics.median(results["poll"]), 1),
        "poll_ratio": round(statistics.median(results["poll"]) / list_us, 2),
        "rounds": {k: [round(v, 1) for v in vs] for k, vs in results.items()},
        "changes_pages": len(pages),
        "list_pages": len(lists),
        "changes_page_bytes": page_bytes,
        "log_full": bytes_full,
        "log_after_publishes": bytes_after,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
