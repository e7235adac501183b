"""docs/api.md §11 through real servers (gunicorn and granian) on the sample corpus.

The expectations are derived from data/sample, whatever it holds: every provenance, the
corrections log, each retraction's 410 in every content coding, comments closed, and the
feeds' disclosure under the feed tests' validators (expat, feedparser, the JSON Feed 1.1
schema). Then a retraction and a correction are published into the served bundle while the
server runs: readers see them within the bundle check interval.
"""

from __future__ import annotations

import json
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import feedparser
import pytest

from app.builder.builder import build
from app.config import PROJECT_ROOT
from tests.helpers import AI_SOURCE_TYPES, expected_article, expected_order, served
from tests.http_support import decode_body
from tests.server import Server
from tests.test_feeds import JSON_FEED
from tests.test_trust import expected_log, expected_notice

pytestmark = pytest.mark.e2e

SAMPLE = PROJECT_ROOT / "data" / "sample"
SCHEME = "http://cv.iptc.org/newscodes/digitalsourcetype/"
TOKEN = "e2e-trust-token"


def sample_records(src: Path = SAMPLE) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for path in sorted(src.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def path_of(record: dict[str, Any]) -> str:
    return f"/api/v1/{record['language']}/articles/{quote(record['id'], safe='')}"


@pytest.fixture(scope="module", params=["gunicorn", "granian"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp(f"trust-{request.param}")
    src = tmp / "src"
    shutil.copytree(SAMPLE, src)
    bundle = tmp / "bundle"
    build(src, bundle)
    srv = Server(
        tmp,
        bundle,
        kind=request.param,
        env={"NEWS_BUNDLE_CHECK_INTERVAL": "0.2", "NEWS_ADMIN_TOKEN": TOKEN},
    )
    try:
        yield srv.start()
    finally:
        srv.kill()


def test_the_sample_shows_every_kind_of_trust_data(server: Server) -> None:
    records = sample_records(server.bundle_dir.parent / "src")
    kinds = {(r.get("provenance") or {}).get("source_type") for r in records}
    assert len(kinds - {None}) >= 3  # several kinds of provenance
    assert any(r.get("corrections") and not r.get("retracted") for r in records)
    assert any(r.get("retracted") for r in records)
    for record in served(records):
        got = server.get(path_of(record))
        assert got.status == 200 and got.json() == expected_article(record, records)
    for language in sorted({r["language"] for r in records}):
        log = server.get(f"/api/v1/{language}/corrections?page_size=100")
        assert log.status == 200 and log.json()["items"] == expected_log(records, language)
        listing = server.get(f"/api/v1/{language}/articles?page_size=100").json()
        assert listing["items"] == expected_order(records, language)


def test_a_retraction_answers_410_in_every_coding_and_closes_comments(server: Server) -> None:
    records = sample_records(server.bundle_dir.parent / "src")
    for record in [r for r in records if r.get("retracted")]:
        path = path_of(record)
        plain = server.get(path)
        assert plain.status == 410 and plain.json() == expected_notice(record)
        assert plain.headers["cache-control"].startswith("public, max-age=")
        assert plain.headers["surrogate-key"].startswith(f"lang-{record['language']} art-")
        etags = {plain.headers["etag"]}
        for coding in ("gzip", "br", "zstd"):
            packed = server.get(path, {"Accept-Encoding": coding})
            assert packed.status == 410 and packed.headers["content-encoding"] == coding
            assert decode_body(coding, packed.body) == plain.body
            etags.add(packed.headers["etag"])
        assert len(etags) == 4
        again = server.get(path, {"If-None-Match": plain.headers["etag"]})
        assert again.status == 410 and again.body == plain.body
        closed = {"detail": "Article retracted"}
        auth = {"Authorization": f"Bearer {TOKEN}"}
        for method, target, body in (
            ("GET", f"{path}/comments", None),
            ("GET", f"{path}/comments/count", None),
            ("GET", f"{path}/comments/1", None),
            ("POST", f"{path}/comments", {"author": "a", "content": "b"}),
            ("DELETE", f"{path}/comments/1", None),
        ):
            # The admin token where one is read (DELETE); a create sends none (the admin
            # token is no author's: a 401 before the article, docs/moderation.md).
            headers = auth if method == "DELETE" else None
            answer = server.request(method, target, json=body, headers=headers)
            assert (answer.status, answer.json()) == (410, closed), (method, target)
        language, article_id = record["language"], record["id"]
        counts = server.request(
            "POST", f"/api/v1/{language}/comments/counts", json={"article_ids": [article_id]}
        )
        assert counts.json()["counts"] == {article_id: None}


def test_feeds_disclose_the_source_type_and_stay_valid(server: Server) -> None:
    records = sample_records(server.bundle_dir.parent / "src")
    for language in sorted({r["language"] for r in records}):
        expected = {
            a["id"]: a["provenance"]["source_type"] for a in expected_order(records, language)[:50]
        }
        atom = server.get(f"/api/v1/{language}/feed.atom").body
        ET.fromstring(atom)
        parsed = feedparser.parse(atom)
        assert not parsed.bozo, parsed.get("bozo_exception")
        disclosed = [
            [t["term"] for t in entry.tags if t.get("scheme") == SCHEME] for entry in parsed.entries
        ]
        assert disclosed == [[kind] for kind in expected.values()]
        rss = server.get(f"/api/v1/{language}/feed.rss").body
        root = ET.fromstring(rss)
        assert not feedparser.parse(rss).bozo
        domains = [
            [c.text for c in item.findall("category") if c.get("domain") == SCHEME]
            for item in root.iter("item")
        ]
        assert domains == [[kind] for kind in expected.values()]
        document = server.get(f"/api/v1/{language}/feed.json").json()
        JSON_FEED.validate(document)
        provenance = [item["_provenance"] for item in document["items"]]
        assert provenance == [
            {"source_type": kind, "ai_generated": kind in AI_SOURCE_TYPES}
            for kind in expected.values()
        ]


def test_a_published_retraction_and_correction_reach_readers(server: Server) -> None:
    """Runs last in the module: it changes the served bundle."""
    src = server.bundle_dir.parent / "src"
    records = sample_records(src)
    target = next(r for r in served(records) if r["language"] == "ko")
    fixed = next(r for r in served(records) if r["language"] == "ja")
    lines = []
    for record in records:
        if record is target:
            record["retracted"] = {"at": "2026-11-30T00:00:00Z", "reason": "오보"}
        if record is fixed:
            record["corrections"] = [{"at": "2026-11-30T01:00:00+09:00", "text": "訂正"}]
        lines.append(record)
    for path in src.glob("*.jsonl"):
        path.unlink()
    (src / "all.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8"
    )
    build(src, server.bundle_dir)
    # Each worker picks the new bundle up on its own: wait until 20 answers in a row (every
    # worker, whichever answers) give the notice.
    deadline = time.monotonic() + 10
    streak = 0
    while streak < 20:
        assert time.monotonic() < deadline, "the retraction did not reach readers"
        if server.get(path_of(target)).status == 410:
            streak += 1
        else:
            streak = 0
            time.sleep(0.1)
    time.sleep(1.0)  # five check intervals: a worker that answered none of them has switched too
    assert server.get(path_of(target)).json() == expected_notice(target)
    assert server.get(path_of(fixed)).json() == expected_article(fixed, lines)
    listing = server.get("/api/v1/ko/articles?page_size=100").json()
    assert target["id"] not in [a["id"] for a in listing["items"]]
    log = server.get("/api/v1/ja/corrections?page_size=100").json()["items"]
    assert log == expected_log(lines, "ja")
