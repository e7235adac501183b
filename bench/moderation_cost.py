"""What comment moderation costs, in process, on PostgreSQL (docs/benchmarks.md, "Moderation").

Two measures, each in alternating rounds of fresh subprocesses, best round kept:

- `reads`: the public comment list (page of 20 of 200 comments) and count, through the whole
  WSGI app's comment routes, on this tree's code and on another tree's (`--base DIR`: a
  checkout of the code before moderation), so the two are compared on the same machine and
  database in one run;
- `creates`: a create with 10,000 banned and 10,000 suspect terms in each of the nine
  languages' lists against a create without lists (same server and database).

    .venv/bin/python bench/moderation_cost.py reads --base /tmp/before --rounds 5
    .venv/bin/python bench/moderation_cost.py creates --rounds 5

Each request's CPU and wall time go through falcon.testing (the same for both sides); the
figures are microseconds of wall time per request, the database on 127.0.0.1:5432.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG = "postgresql://postgres@127.0.0.1:5432"
LANGUAGES = ("ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it")


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def _client(dsn: str, **overrides: Any) -> Any:
    """The comment routes of the app on `dsn` (whichever tree `app` is imported from)."""
    from dataclasses import replace
    from types import SimpleNamespace

    import falcon
    import falcon.testing

    from app import errors
    from app.comments import create_comment_service
    from app.config import Settings
    from app.mount import mount
    from app.routes import ROUTES

    settings = replace(
        Settings(comments_dsn=dsn, comment_rate_count=10**9, comment_rate_seconds=60),
        **overrides,
    )
    service = create_comment_service(settings, lambda language, article_id: True)
    app = falcon.App()
    errors.install(app)
    mount(app, SimpleNamespace(settings=settings, comments=service), [
        r for r in ROUTES if r.tag in ("comments", "moderation")
    ])  # fmt: skip
    return falcon.testing.TestClient(app)


def _time(call: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n * 1e6


def child_reads(dsn: str, n: int) -> dict[str, float]:
    client = _client(dsn)
    path = "/api/v1/en/articles/bench/comments"
    for _ in range(3):  # warm: connections, plans, imports
        client.simulate_get(path)
        client.simulate_get(path + "/count")
    return {
        "list": _time(lambda: client.simulate_get(path), n),
        "count": _time(lambda: client.simulate_get(path + "/count"), n),
    }


def child_creates(dsn: str, n: int, terms: str | None) -> dict[str, float]:
    client = _client(dsn, moderation_terms=Path(terms) if terms else None)
    rng = random.Random(7)
    words = ["market", "vote", "city", "rain", "school", "game", "price", "river", "plan"]
    serial = iter(range(10**9))

    def create() -> None:
        # Unique per process too: rounds share the database, and the same text from the same
        # client within ten minutes is a duplicate (409).
        text = " ".join(rng.choice(words) for _ in range(60)) + f" {os.getpid()}.{next(serial)}"
        reply = client.simulate_post(
            f"/api/v1/{LANGUAGES[next(serial) % 9]}/articles/bench/comments",
            json={"author": "Reader", "content": text},
        )
        assert reply.status_code == 201, reply.text

    for _ in range(5):
        create()
    return {"create": _time(create, n)}


def _populate(dsn: str) -> None:
    client = _client(dsn)
    for i in range(200):
        reply = client.simulate_post(
            "/api/v1/en/articles/bench/comments",
            json={"author": "Reader", "content": f"Comment number {i} on the bench article."},
            remote_addr=f"10.0.{i // 200}.{i % 200}",
        )
        assert reply.status_code == 201


def _terms(directory: Path, per_list: int) -> None:
    rng = random.Random(11)
    scripts = {
        "ko": (0xAC00, 0xD7A3, 2, 4),
        "ja": (0x3041, 0x3096, 2, 5),
        "zh_cn": (0x4E00, 0x9FA5, 2, 3),
        "zh_tw": (0x4E00, 0x9FA5, 2, 3),
    }
    for language in LANGUAGES:
        low, high, short, long = scripts.get(language, (0x61, 0x7A, 5, 10))
        for kind in ("banned", "suspect"):
            terms = {
                "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(short, long)))
                for _ in range(per_list)
            }
            (directory / f"{language}.{kind}").write_text("\n".join(sorted(terms)) + "\n")


def _run_child(tree: Path, args: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, __file__, "child", *args],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["reads", "creates", "child"])
    parser.add_argument("rest", nargs="*")
    parser.add_argument("--base", type=Path, help="a checkout of the code before moderation")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args()
    if args.what == "child":
        kind, dsn, n, *extra = args.rest
        if kind == "populate":
            _populate(dsn)
            result = {}
        elif kind == "reads":
            result = child_reads(dsn, int(n))
        else:
            result = child_creates(dsn, int(n), extra[0] if extra else None)
        print(json.dumps(result))
        return
    names = [f"news_bench_{os.getpid()}_{side}" for side in ("before", "now")]
    for name in names:
        _admin(f'CREATE DATABASE "{name}"')
    dsn = f"{PG}/{names[1]}"
    try:
        if args.what == "reads":
            assert args.base is not None, "reads compares with --base"
            # Each side's database made by its own code (schema and indexes), same rows.
            sides = {"before": (args.base, f"{PG}/{names[0]}"), "now": (ROOT, dsn)}
            for tree, side_dsn in sides.values():
                _run_child(tree, ["populate", side_dsn, "0"])
            best: dict[str, dict[str, float]] = {side: {} for side in sides}
            for _ in range(args.rounds):
                for side, (tree, side_dsn) in sides.items():
                    got = _run_child(tree, ["reads", side_dsn, str(args.n)])
                    for key, value in got.items():
                        best[side][key] = min(value, best[side].get(key, float("inf")))
            for key in ("list", "count"):
                ratio = best["now"][key] / best["before"][key]
                print(
                    f"{key:6} before {best['before'][key]:7.1f} us  now {best['now'][key]:7.1f} us"
                    f"  now/before {ratio:.3f}"
                )
        else:
            with tempfile.TemporaryDirectory() as tmp:
                _terms(Path(tmp), 10_000)
                sides = {"without lists": None, "with 2 x 10,000 terms": tmp}
                best_create: dict[str, float] = {}
                for _ in range(args.rounds):
                    for side, terms in sides.items():
                        extra = [] if terms is None else [terms]
                        got = _run_child(ROOT, ["creates", dsn, str(args.n), *extra])
                        best_create[side] = min(got["create"], best_create.get(side, 1e18))
                base = best_create["without lists"]
                for side, value in best_create.items():
                    print(f"{side:24} {value:8.1f} us/create  x{value / base:.3f}")
    finally:
        for name in names:
            _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()
