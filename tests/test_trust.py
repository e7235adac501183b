"""Provenance, corrections and retractions (docs/api.md §11), against oracles.

The oracle of every answer is computed from the source records alone (tests/helpers.py:
`expected_article` and friends, and `expected_log` here). Random corpora go through random
publish sequences (add, change, remove, correct, retract, withdraw a retraction), built
incrementally; after the last one a retracted article must be nowhere but its own URL, every
answer must equal the oracle's, and every response must equal that of a from-scratch build.
"""

from __future__ import annotations

import gzip
import random
import re
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
from falcon.testing import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import surrogate_keys
from app.builder import builder
from app.config import Settings
from app.wsgi import create_app
from tests.helpers import (
    expected_article,
    expected_categories,
    expected_order,
    served,
    summary_of,
    utc,
)
from tests.http_support import decode_body
from tests.test_incremental import (
    CATEGORIES,
    WORDS,
    assert_same_as_full,
    make_article,
    requests_for,
    write_tree,
)

TOKEN = "trust-admin-token"
PROVENANCES: list[dict[str, Any] | None] = [
    None,
    {},
    {"source_type": "trainedAlgorithmicMedia", "generator": "writer-1"},
    {"source_type": "compositeWithTrainedAlgorithmicMedia", "sources": ["https://example.org/a"]},
    {"source_type": "algorithmicMedia", "generator": "results-template"},
    {
        "source_type": "digitalCreation",
        "reviewed_by": "Desk",
        "reviewed_at": "2026-03-05T12:00:00+09:00",
    },
]
REASONS = ["Wrong figures.", "The source withdrew its report.", "재검토 결과 사실이 아님"]


def _note_time(rng: random.Random) -> str:
    # After every published_at of make_article (March 1 to 5); few values: ties happen.
    return f"2026-03-0{rng.randint(6, 7)}T0{rng.randint(0, 1)}:00:00Z"


def trust_article(rng: random.Random, language: str, article_id: str) -> dict[str, Any]:
    record = make_article(rng, language, article_id, stories=True)
    provenance = rng.choice(PROVENANCES)
    if provenance is not None:
        record["provenance"] = provenance
    if rng.random() < 0.3:
        record["corrections"] = [
            {"at": _note_time(rng), "text": rng.choice(["Fixed a name.", "Date corrected."])}
            for _ in range(rng.randint(1, 2))
        ]
    if rng.random() < 0.2:
        record["retracted"] = {"at": _note_time(rng), "reason": rng.choice(REASONS)}
    return record


def publish(files: dict[str, list[dict]], op: str, seed: int, counter: list[int]) -> None:
    rng = random.Random(seed)
    everything = [(name, i) for name, rs in files.items() for i in range(len(rs))]
    if op == "add" or not everything:
        for _ in range(rng.randint(1, 5)):
            counter[0] += 1
            language = rng.choice(list(WORDS))
            name = rng.choice(["a.jsonl", "b.jsonl"])
            files.setdefault(name, []).append(trust_article(rng, language, f"n{counter[0]}"))
    elif op == "change":
        name, i = rng.choice(everything)
        old = files[name][i]
        files[name][i] = trust_article(rng, old["language"], old["id"])
    elif op == "remove":
        name, i = rng.choice(everything)
        del files[name][i]
    elif op == "correct":
        for name, i in rng.sample(everything, min(len(everything), 2)):
            record = files[name][i]
            notes = record.get("corrections") or []
            record["corrections"] = [*notes, {"at": _note_time(rng), "text": "Corrected."}]
    elif op == "retract":
        for name, i in rng.sample(everything, min(len(everything), 2)):
            files[name][i]["retracted"] = {"at": _note_time(rng), "reason": rng.choice(REASONS)}
    elif op == "withdraw":  # a retraction taken back: the article is served again
        retracted = [(n, i) for n, i in everything if files[n][i].get("retracted")]
        if retracted:
            name, i = rng.choice(retracted)
            del files[name][i]["retracted"]
    for name in [n for n, rs in files.items() if not rs]:
        del files[name]
    if not files:
        files["a.jsonl"] = [trust_article(rng, "en", "seed-article")]


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def expected_log(records: list[dict[str, Any]], language: str) -> list[dict[str, Any]]:
    """The corrections log: every correction of every record still in the sources (retracted
    or not) and every retraction; `at` descending, then article id, kind, text."""
    entries = []
    for r in records:
        if r["language"] != language:
            continue
        for c in r.get("corrections") or []:
            entries.append((-_ts(c["at"]), r["id"], "correction", c["text"], c["at"], r["title"]))
        if r.get("retracted"):
            x = r["retracted"]
            entries.append((-_ts(x["at"]), r["id"], "retraction", x["reason"], x["at"], r["title"]))
    entries.sort(key=lambda e: e[:4])
    return [
        {"article_id": i, "title": title, "kind": kind, "at": utc(at), "text": text}
        for _, i, kind, text, at, title in entries
    ]


def expected_notice(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "detail": "Article retracted",
        "id": record["id"],
        "title": record["title"],
        "retracted_at": utc(record["retracted"]["at"]),
        "reason": record["retracted"]["reason"],
    }


def client_for(bundle: Path, tmp: Path) -> TestClient:
    settings = Settings(
        bundle_dir=bundle, comments_dsn=f"sqlite:///{tmp / 'trust.sqlite3'}", admin_token=TOKEN
    )
    return TestClient(create_app(settings))


def _all_pages(client: TestClient, path: str, query: str = "") -> tuple[list[Any], int]:
    items: list[Any] = []
    page = 1
    while True:
        got = client.simulate_get(path, query_string=f"{query}&page={page}&page_size=100")
        assert got.status_code == 200, got.text
        items += got.json["items"]
        if page >= got.json["total_pages"]:
            return items, got.json["total"]
        page += 1


def assert_trust(client: TestClient, records: list[dict[str, Any]]) -> None:
    """Every §11 answer against the oracle; a retracted article nowhere but its own URL."""
    gone = {(r["language"], r["id"]) for r in records if r.get("retracted")}
    urls_of_gone = {
        f"/articles/{quote(i, safe='')}".encode() for _, i in gone
    }  # public URLs end with this; feeds and sitemaps hold nothing else naming an article
    for language in WORDS:
        base = f"/api/v1/{language}"
        order = expected_order(records, language)
        items, total = _all_pages(client, f"{base}/articles")
        assert items == order and total == len(order)
        latest = client.simulate_get(f"{base}/articles/latest", query_string="limit=50").json
        assert latest == [summary_of(a) for a in order[:50]]
        summaries, _ = _all_pages(client, f"{base}/articles", "fields=summary&order=oldest")
        assert {a["id"] for a in summaries} == {a["id"] for a in order}
        categories = client.simulate_get(f"{base}/categories").json
        assert categories == expected_categories(records, language)
        for word in WORDS[language]:
            found = client.simulate_get(
                f"{base}/articles/search", query_string=f"q={quote(word)}&page_size=100"
            ).json
            assert all((language, a["id"]) not in gone for a in found["items"])
            assert sum(found["facets"]["category"].values()) == found["total"]
            assert found["total"] == len(found["items"])
        for kind in ("atom", "rss", "json"):
            for category in (None, *CATEGORIES):
                query = "" if category is None else f"category={quote(category)}"
                feed = client.simulate_get(f"{base}/feed.{kind}", query_string=query)
                assert feed.status_code == 200
                body = feed.content
                if kind == "json":
                    urls = [item["url"].encode() for item in orjson.loads(body)["items"]]
                    assert not any(u.endswith(g) for u in urls for g in urls_of_gone)
                else:
                    assert not any(g + b"<" in body or g + b'"' in body for g in urls_of_gone)
        sitemap = client.simulate_get(f"/sitemaps/{language}.xml").content
        assert not any(g + b"<" in sitemap or g + b'"' in sitemap for g in urls_of_gone)
        log, log_total = _all_pages(client, f"{base}/corrections")
        assert log == expected_log(records, language) and log_total == len(log)
    news = client.simulate_get("/sitemaps/news.xml").content
    assert not any(g + b"<" in news for g in urls_of_gone)
    by_key = {(r["language"], r["id"]): r for r in records}
    for record in served(records):
        path = f"/api/v1/{record['language']}/articles/{quote(record['id'], safe='')}"
        got = client.simulate_get(path)
        assert got.status_code == 200
        assert got.json == expected_article(record, records)
        assert all((lang, i) not in gone for lang, i in got.json["translations"].items())
    for language, article_id in gone:
        assert_retracted(client, by_key[(language, article_id)])


def assert_retracted(client: TestClient, record: dict[str, Any]) -> None:
    language, article_id = record["language"], record["id"]
    path = f"/api/v1/{language}/articles/{quote(article_id, safe='')}"
    got = client.simulate_get(path)
    assert got.status_code == 410 and got.json == expected_notice(record)
    assert got.headers["cache-control"].startswith("public, max-age=")
    assert surrogate_keys.article_key(language, article_id) in got.headers["surrogate-key"]
    etag = got.headers["etag"]
    # A validator does not turn a 410 into a 304 (RFC 9110, 13.2.1).
    again = client.simulate_get(path, headers={"If-None-Match": etag})
    assert again.status_code == 410 and again.content == got.content
    packed = client.simulate_get(path, headers={"Accept-Encoding": "gzip"})
    assert packed.status_code == 410 and gzip.decompress(packed.content) == got.content
    assert packed.headers["etag"] != etag and packed.headers["vary"] == "Accept-Encoding"
    retracted = {"detail": "Article retracted"}
    comments = f"{path}/comments"
    for method, target, kwargs in (
        ("GET", comments, {}),
        ("GET", f"{comments}/count", {}),
        ("GET", f"{comments}/1", {}),
        ("POST", comments, {"json": {"author": "a", "content": "b"}}),
        ("DELETE", f"{comments}/1", {"headers": {"Authorization": f"Bearer {TOKEN}"}}),
    ):
        answer = client.simulate_request(method, target, **kwargs)
        assert (answer.status_code, answer.json) == (410, retracted), (method, target)
        assert answer.headers["cache-control"] == "no-store"
    ids = f"article_id={quote(article_id, safe='')}"
    counts = client.simulate_get(f"/api/v1/{language}/comments/counts", query_string=ids).json
    assert counts["counts"] == {article_id: None}
    posted = client.simulate_post(
        f"/api/v1/{language}/comments/counts", json={"article_ids": [article_id]}
    ).json
    assert posted["counts"] == {article_id: None}


def trust_requests(files: dict[str, list[dict]], rng: random.Random) -> list[str]:
    """The incremental test's requests, plus the corrections log and every id's comments."""
    urls = requests_for(files, rng)
    for language in WORDS:
        urls += [
            f"/api/v1/{language}/corrections",
            f"/api/v1/{language}/corrections?page=2&page_size=2",
        ]
    return urls


Step = tuple[str, int]
publishes = st.lists(
    st.tuples(
        st.sampled_from(["add", "change", "remove", "correct", "retract", "withdraw"]),
        st.integers(0, 10**6),
    ),
    min_size=1,
    max_size=4,
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 10**6), ops=publishes, merge=st.sampled_from(["auto", "none", "all"]))
def test_a_retracted_article_is_nowhere_and_incremental_is_full(
    tmp_path_factory: pytest.TempPathFactory, seed: int, ops: list[Step], merge: str
) -> None:
    tmp = tmp_path_factory.mktemp("trust")
    rng = random.Random(seed)
    counter = [0]
    files = {"a.jsonl": [trust_article(rng, rng.choice(list(WORDS)), f"a{i}") for i in range(8)]}
    src, out = tmp / "src", tmp / "out"
    write_tree(src, files)
    builder.build(src, out, jobs=1)
    for op, step_seed in ops:
        publish(files, op, step_seed, counter)
        write_tree(src, files)
        builder.build(src, out, jobs=1, merge=merge)  # type: ignore[arg-type]
    records = [r for rs in files.values() for r in rs]
    assert_trust(client_for(out, tmp), records)
    assert_same_as_full(src, out, trust_requests(files, rng), tmp)


def test_a_retraction_purges_what_it_changed(tmp_path: Path) -> None:
    """The purge list of a publish that retracts a served article names the article, its
    language's collections (lists, feeds, sitemap pages, the corrections log), its category
    and its translations; withdrawing the retraction names them again."""
    rng = random.Random(21)
    records = [trust_article(rng, "en", f"p{i}") for i in range(6)]
    for r in records:
        r.pop("retracted", None)
        r["story_id"] = None
    target = {**records[2], "category": "only-here", "story_id": "story-x"}
    records[2] = target
    twin = trust_article(rng, "ko", "k-twin")
    twin.pop("retracted", None)
    twin["story_id"] = "story-x"
    src, out = tmp_path / "src", tmp_path / "out"
    write_tree(src, {"a.jsonl": [*records, twin]})
    builder.build(src, out, jobs=1)
    retracted = {**target, "retracted": {"at": "2026-03-08T00:00:00Z", "reason": "Wrong."}}
    write_tree(src, {"a.jsonl": [*records[:2], retracted, *records[3:], twin]})
    report = builder.build_report(src, out, jobs=1)
    assert report.retractions == 1 and report.retracted == 0
    keys = set(report.purge_keys)
    assert {
        surrogate_keys.article_key("en", target["id"]),
        surrogate_keys.collection_key("en"),
        surrogate_keys.category_key("en", "only-here"),
        # its translation in Korean loses it from `translations`
        surrogate_keys.article_key("ko", "k-twin"),
        surrogate_keys.collection_key("ko"),
    } <= keys
    client = client_for(out, tmp_path)
    assert client.simulate_get("/api/v1/ko/articles/k-twin").json["translations"] == {}
    assert_retracted(client, retracted)
    write_tree(src, {"a.jsonl": [*records, twin]})  # withdrawn: served again
    back = builder.build_report(src, out, jobs=1)
    assert back.retractions == 1
    assert back.purge_keys.count(surrogate_keys.article_key("en", target["id"])) == 1
    assert len(set(back.purge_keys)) == len(back.purge_keys)
    assert surrogate_keys.category_key("en", "only-here") in back.purge_keys
    fresh = client_for(out, tmp_path)
    assert fresh.simulate_get(f"/api/v1/en/articles/{target['id']}").status_code == 200
    assert fresh.simulate_get("/api/v1/ko/articles/k-twin").json["translations"] == {
        "en": target["id"]
    }


def test_an_unchanged_retraction_is_not_parsed_again(tmp_path: Path) -> None:
    rng = random.Random(5)
    records = [trust_article(rng, "ja", f"j{i}") for i in range(10)]
    records[0]["retracted"] = {"at": "2026-03-08T00:00:00Z", "reason": "Wrong."}
    src, out = tmp_path / "src", tmp_path / "out"
    write_tree(src, {"a.jsonl": records})
    builder.build(src, out, jobs=1)
    # Same bytes, new mtime: the file is hashed again, and every line is recognised.
    (src / "a.jsonl").write_bytes((src / "a.jsonl").read_bytes())
    again = builder.build_report(src, out, jobs=1)
    assert again.added == again.retractions == again.retracted == 0
    assert again.purge_keys == []


def test_the_corrections_log_pages_like_a_list(tmp_path: Path) -> None:
    rng = random.Random(8)
    records = []
    for i in range(7):
        record = trust_article(rng, "en", f"c{i}")
        record.pop("retracted", None)
        record["corrections"] = [{"at": f"2026-03-0{6 + i % 2}T00:00:00Z", "text": f"Fix {i}."}]
        records.append(record)
    src, out = tmp_path / "src", tmp_path / "out"
    write_tree(src, {"a.jsonl": records})
    builder.build(src, out, jobs=1)
    client = client_for(out, tmp_path)
    log = expected_log(records, "en")
    got = client.simulate_get("/api/v1/en/corrections", query_string="page=2&page_size=3")
    assert got.json == {
        "items": log[3:6],
        "total": 7,
        "page": 2,
        "page_size": 3,
        "total_pages": 3,
    }
    rels = dict(
        (rel, url) for url, rel in re.findall(r'<([^>]*)>; rel="(\w+)"', got.headers["link"])
    )
    assert rels == {
        "first": "/api/v1/en/corrections?page_size=3&page=1",
        "prev": "/api/v1/en/corrections?page_size=3&page=1",
        "next": "/api/v1/en/corrections?page_size=3&page=3",
        "last": "/api/v1/en/corrections?page_size=3&page=3",
    }
    assert got.headers["surrogate-key"] == surrogate_keys.collection("en")
    cached = client.simulate_get(
        "/api/v1/en/corrections",
        query_string="page=2&page_size=3",
        headers={"If-None-Match": got.headers["etag"]},
    )
    assert cached.status_code == 304
    for coding in ("gzip", "zstd"):
        packed = client.simulate_get(
            "/api/v1/en/corrections",
            query_string="page=2&page_size=3",
            headers={"Accept-Encoding": coding},
        )
        assert packed.headers["content-encoding"] == coding
        assert decode_body(coding, packed.content) == got.content
    past = client.simulate_get("/api/v1/en/corrections", query_string="page=99")
    assert past.json["items"] == [] and past.json["total"] == 7
    for bad in ("page=0", "page_size=101", "page=abc"):
        assert client.simulate_get("/api/v1/en/corrections", query_string=bad).status_code == 422
    assert client.simulate_get("/api/v1/xx/corrections", query_string="page=0").json == {
        "detail": "Unsupported language: xx"
    }
    empty = client.simulate_get("/api/v1/de/corrections").json
    assert empty == {"items": [], "total": 0, "page": 1, "page_size": 20, "total_pages": 0}
