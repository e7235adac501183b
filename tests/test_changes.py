"""The change feed for mirrors (docs/api.md §13), through the HTTP stack, over real builds.

Contract cases first (shape, order of checks, cursors, lineage, retention, caching), then
the exactness property: over random sequences of publishes (add, change, correct, retract,
un-retract, remove, re-add, move), a client that starts without `since` at any point,
follows `next` until `more` is false and then polls after each publish, ends with exactly the
ids the service serves, each in the state it answers.
"""

from __future__ import annotations

import random
import shutil
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
from app.bundle import changes
from app.bundle import format as fmt
from app.bundle.reader import Bundle
from app.config import Settings
from app.wsgi import create_app
from tests.helpers import bundle_files, good, write_jsonl

HOUR_US = 3_600 * 1_000_000
DAY_US = 24 * HOUR_US
T0 = 1_800_000_000 * 1_000_000  # a publish time well after the sources' times


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Crash safety is tests/test_publish.py's; here builds need not wait for the disk."""
    monkeypatch.setattr("os.fsync", lambda fd: None)


def client_for(out: Path, tmp: Path) -> TestClient:
    tmp.mkdir(parents=True, exist_ok=True)
    db = tmp / f"c{len(list(tmp.iterdir()))}.sqlite3"
    return TestClient(create_app(Settings(bundle_dir=out, comments_dsn=f"sqlite:///{db}")))


def publish(src: Path, out: Path, records: list[dict[str, Any]], at: int, **kw: Any) -> Any:
    if src.exists():
        shutil.rmtree(src)
    write_jsonl(src / "a.jsonl", records)
    return builder.build_report(src, out, jobs=1, publish_time=at, **kw)


def get(client: TestClient, language: str, **params: Any) -> Any:
    query = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())
    return client.simulate_get(f"/api/v1/{language}/changes", query_string=query)


def walk(client: TestClient, language: str = "en", since: str | None = None, limit: int = 100):
    """Every page from `since` (or the initial listing) until `more` is false."""
    pages = []
    while True:
        r = get(client, language, **({"since": since} if since else {}), limit=limit)
        assert r.status_code == 200, r.text
        pages.append(r.json)
        ids = [i["id"] for i in r.json["items"]]
        assert len(ids) == len(set(ids)), "an article at most once per answer"
        assert r.json["next"]
        since = r.json["next"]
        if not r.json["more"]:
            return pages, since


def items(pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [i for p in pages for i in p["items"]]


def retracted(record: dict[str, Any], reason: str = "Wrong figures.") -> dict[str, Any]:
    return {**record, "retracted": {"at": "2026-02-01T00:00:00Z", "reason": reason}}


# -- the initial listing, paging, kinds -----------------------------------------------------


def test_initial_listing_then_polling(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    a, b, c, d = (good(i, published_at=f"2026-01-0{n}T00:00:00Z") for n, i in enumerate("abcd", 1))
    publish(src, out, [a, b, c, retracted(d), good("k", language="ko")], T0)
    client = client_for(out, tmp_path / "db")
    pages, cursor = walk(client, limit=2)
    assert [len(p["items"]) for p in pages] == [2, 2]
    assert pages[0]["more"] is True and pages[-1]["more"] is False
    got = {i["id"]: i for i in items(pages)}
    assert set(got) == {"a", "b", "c", "d"}  # every current article and every retraction
    assert got["d"] == {
        "id": "d",
        "kind": "retracted",
        "at": "2027-01-15T08:00:00Z",
        "updated_at": None,
    }
    assert got["a"]["kind"] == "upsert" and got["a"]["updated_at"] == "2026-01-01T00:00:00Z"
    # Nothing new: the same cursor, no items.
    r = get(client, "en", since=cursor)
    assert r.json == {"items": [], "next": cursor, "more": False}

    # A change, a correction, a removal, a new article, a retraction withdrawn.
    corrected = {**b, "corrections": [{"at": "2026-03-01T10:00:00.5Z", "text": "Fixed."}]}
    publish(src, out, [{**a, "title": "New"}, corrected, d, good("e")], T0 + HOUR_US)
    client = client_for(out, tmp_path / "db")
    pages, after = walk(client, since=cursor)
    news = items(pages)
    assert [(i["id"], i["kind"]) for i in news] == [
        ("a", "upsert"),
        ("b", "upsert"),
        ("c", "removed"),
        ("d", "upsert"),
        ("e", "upsert"),
    ]
    assert {i["at"] for i in news} == {"2027-01-15T09:00:00Z"}
    assert news[1]["updated_at"] == "2026-03-01T10:00:00.5Z"  # as GET answers it
    assert (
        client.simulate_get("/api/v1/en/articles/b").json["updated_at"] == "2026-03-01T10:00:00.5Z"
    )
    assert news[2]["updated_at"] is None
    # The initial listing now: no `removed` item for what was removed before the walk began.
    assert {i["id"] for i in items(walk(client)[0])} == {"a", "b", "d", "e"}
    assert get(client, "en", since=after).json["items"] == []


def test_a_line_that_moves_or_changes_nothing_served_is_no_change(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    records = [good("a"), good("b"), good("c")]
    publish(src, out, records, T0)
    cursor = walk(client_for(out, tmp_path / "db"))[1]
    shutil.rmtree(src)
    write_jsonl(src / "z.jsonl", [records[2], records[0]])  # moved to another file
    # Same fields in another key order: another line, the same answer to GET.
    write_jsonl(src / "b.jsonl", [dict(reversed(list(records[1].items())))])
    report = builder.build_report(src, out, jobs=1, publish_time=T0 + HOUR_US)
    assert report.incremental and report.added == 1
    r = get(client_for(out, tmp_path / "db"), "en", since=cursor)
    assert r.json == {"items": [], "next": cursor, "more": False}


def test_a_translation_is_a_change_of_the_other_language(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good("e", story_id="s")], T0)
    cursor = walk(client_for(out, tmp_path / "db"))[1]
    publish(src, out, [good("e", story_id="s"), good("k", language="ko", story_id="s")], T0 + 1)
    client = client_for(out, tmp_path / "db")
    assert [(i["id"], i["kind"]) for i in get(client, "en", since=cursor).json["items"]] == [
        ("e", "upsert")
    ]
    assert client.simulate_get("/api/v1/en/articles/e").json["translations"] == {"ko": "k"}


def test_removed_only_after_the_walk_began(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    records = [good(f"a{n}", published_at=f"2026-01-0{n + 1}T00:00:00Z") for n in range(5)]
    publish(src, out, records, T0)
    client = client_for(out, tmp_path / "db")
    first = get(client, "en", limit=2).json
    seen = [i["id"] for i in first["items"]]
    assert seen == ["a0", "a1"]
    # Mid-walk: one article seen is removed, one not yet seen is removed.
    publish(src, out, [r for r in records if r["id"] not in ("a1", "a3")], T0 + HOUR_US)
    client = client_for(out, tmp_path / "db")
    pages, _ = walk(client, since=first["next"], limit=2)
    rest = [(i["id"], i["kind"]) for i in items(pages)]
    assert rest == [("a2", "upsert"), ("a4", "upsert"), ("a1", "removed"), ("a3", "removed")]


# -- checks, cursors, lineage --------------------------------------------------------------


def test_order_of_checks_and_limits(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good(f"a{n}") for n in range(3)], T0)
    client = client_for(out, tmp_path / "db")
    assert get(client, "xx", limit=0, since="bad").status_code == 400
    r = get(client, "en", limit=0, since="bad")
    assert r.status_code == 422 and r.json["detail"][0]["loc"] == ["query", "limit"]
    for bad in ("0", "1001", "abc", "1.5", ""):
        assert get(client, "en", limit=bad).status_code == 422, bad
    assert len(get(client, "en", limit=1000).json["items"]) == 3
    good_cursor = get(client, "en", limit=1).json["next"]
    for cursor in ("bad", "", good_cursor[:-1], good_cursor[:-2] + "AA", good_cursor + "A"):
        r = get(client, "en", since=cursor)
        assert r.status_code == 410, cursor
        assert r.json == {"detail": "Cursor expired"}
        assert r.headers["cache-control"] == "no-store"
    # A cursor of another language.
    assert get(client, "ko", since=good_cursor).status_code == 410
    assert client.simulate_head("/api/v1/en/changes").status_code == 200


def test_cursors_hold_across_publishes_and_instances_but_not_lineages(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good("a"), good("b")], T0)
    old_cursor = walk(client_for(out, tmp_path / "db"))[1]
    older = tmp_path / "older"
    shutil.copytree(out, older)  # an instance still serving the previous bundle
    publish(src, out, [good("a"), good("c")], T0 + HOUR_US)
    new_pages, new_cursor = walk(client_for(out, tmp_path / "db"), since=old_cursor)
    assert [(i["id"], i["kind"]) for i in items(new_pages)] == [("b", "removed"), ("c", "upsert")]
    # Another instance with the same bundle answers the same.
    again = tmp_path / "again"
    shutil.copytree(out, again)
    assert get(client_for(again, tmp_path / "db"), "en", since=old_cursor).json == new_pages[0]
    # A cursor from the newer bundle, at an instance still on the older one (a rollout).
    r = get(client_for(older, tmp_path / "db"), "en", since=new_cursor)
    assert r.status_code == 200 and r.json == {"items": [], "next": new_cursor, "more": False}
    # A walk begun on the newer bundle is from the newer bundle too.
    walk_cursor = get(client_for(out, tmp_path / "db"), "en", limit=1).json["next"]
    r = get(client_for(older, tmp_path / "db"), "en", since=walk_cursor)
    assert r.json == {"items": [], "next": walk_cursor, "more": False}
    # --full starts a new history: the old cursors are expired, even for the same sources.
    builder.build_report(src, out, jobs=1, full=True)
    client = client_for(out, tmp_path / "db")
    for cursor in (old_cursor, new_cursor):
        r = get(client, "en", since=cursor)
        assert r.status_code == 410 and r.headers["cache-control"] == "no-store"
    assert {i["id"] for i in items(walk(client)[0])} == {"a", "c"}


def test_from_scratch_builds_stay_byte_identical(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("a"), retracted(good("r")), good("k", language="ko")])
    one, two = tmp_path / "one", tmp_path / "two"
    builder.build(src, one)
    builder.build(src, two)
    assert bundle_files(one) == bundle_files(two)
    # The same lineage: a cursor of one is a cursor of the other.
    cursor = walk(client_for(one, tmp_path / "db"))[1]
    assert get(client_for(two, tmp_path / "db"), "en", since=cursor).status_code == 200
    # The publish time of a from-scratch build is the newest time in its sources.
    meta = Bundle.load(one).languages["en"].changes
    assert int(meta.records["at"][0]) == 1_769_904_000 * 1_000_000  # 2026-02-01, the retraction


def test_incremental_builds_keep_the_lineage_log(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good("a"), good("b")], T0)
    lineage = Bundle.load(out).languages["en"].changes.lineage
    publish(src, out, [good("a")], T0 + 1)
    publish(src, out, [good("a"), good("b")], T0 + 2)
    log = Bundle.load(out).languages["en"].changes
    assert log.lineage == lineage
    assert log.head == 4  # a, b; b removed; b again
    assert log.seq.tolist() == [1, 4] and log.kinds.tolist() == [0, 0]
    # 16 bytes per entry kept: the records are fixed-width.
    manifest = orjson.loads((out / fmt.MANIFEST).read_bytes())
    obj = manifest["languages"]["en"]["files"][fmt.CHANGES_LOG]
    assert (out / "objects" / obj).stat().st_size == 2 * changes.CHANGE_RECORD.itemsize


# -- retention ------------------------------------------------------------------------------


def test_retention_drops_old_publishes_and_expires_their_cursors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEWS_CHANGES_RETENTION_DAYS", "2")
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good("a"), good("b"), good("c")], T0)
    first = walk(client_for(out, tmp_path / "db"))[1]
    publish(src, out, [good("a"), good("b")], T0 + DAY_US)  # c removed
    second = walk(client_for(out, tmp_path / "db"), since=first)[1]
    publish(src, out, [good("a")], T0 + 3 * DAY_US)  # b removed; the first publish expires
    client = client_for(out, tmp_path / "db")
    # A cursor at the end of the expired publish lost nothing: it still answers.
    r = get(client, "en", since=first)
    assert [(i["id"], i["kind"]) for i in r.json["items"]] == [("c", "removed"), ("b", "removed")]
    r = get(client, "en", since=second)
    assert [(i["id"], i["kind"]) for i in r.json["items"]] == [("b", "removed")]
    log = Bundle.load(out).languages["en"].changes
    assert log.floor == 3
    publish(src, out, [good("a"), good("d")], T0 + 6 * DAY_US)  # the next two expire too
    client = client_for(out, tmp_path / "db")
    for cursor in (first, second):  # both before the oldest change kept
        r = get(client, "en", since=cursor)
        assert r.status_code == 410 and r.headers["cache-control"] == "no-store"
    assert Bundle.load(out).languages["en"].changes.floor == 5
    log = Bundle.load(out).languages["en"].changes
    assert log.kinds.tolist() == [0, 0]  # c's and b's removals are forgotten
    # The initial listing still works, whatever has expired: a is from the first publish.
    assert {i["id"] for i in items(walk(client)[0])} == {"a", "d"}


# -- caching ----------------------------------------------------------------------------------


def test_answers_are_cacheable_and_purged_with_their_language(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    publish(src, out, [good("a"), good("k", language="ko")], T0)
    client = client_for(out, tmp_path / "db")
    r = get(client, "en")
    assert r.status_code == 200
    assert r.headers["cache-control"].startswith("public, max-age=")
    keys = r.headers["surrogate-key"].split()
    assert surrogate_keys.language_key("en") in keys
    etag = r.headers["etag"]
    r2 = client.simulate_get("/api/v1/en/changes", headers={"If-None-Match": etag})
    assert r2.status_code == 304
    for coding in ("gzip", "br", "zstd"):
        assert (
            client.simulate_get("/api/v1/en/changes", headers={"Accept-Encoding": coding}).headers[
                "content-encoding"
            ]
            == coding
        )
    # A publish that changes en purges a key every en answer carries, and not ko's.
    report = publish(src, out, [good("a", title="T"), good("k", language="ko")], T0 + 1)
    assert set(keys) & set(report.purge_keys)
    ko_keys = get(client, "ko").headers["surrogate-key"].split()
    assert not set(ko_keys) & set(report.purge_keys)
    client = client_for(out, tmp_path / "db")
    r3 = client.simulate_get("/api/v1/en/changes", headers={"If-None-Match": etag})
    assert r3.status_code == 200 and r3.headers["etag"] != etag


# -- exactness, as a property -----------------------------------------------------------------

LANGS = ("en", "ko")
OPS = ["add", "change", "correct", "retract", "unretract", "remove", "readd", "move", "noop"]


def _mutate(state: dict[str, Any], op: str, rng: random.Random) -> None:
    """`state`: id -> record (language, fields), `gone`: ids removed, `files`: id -> file."""
    live = sorted(state["records"])
    if op == "add" or not live:
        for _ in range(rng.randint(1, 3)):
            state["n"] += 1
            language = rng.choice(LANGS)
            i = f"{language}-{state['n']}"
            state["records"][i] = good(
                i,
                language=language,
                title=f"t{rng.randint(0, 3)}",
                published_at=f"2026-01-0{rng.randint(1, 3)}T00:00:00Z",
                story_id=rng.choice([None, "s1", "s2"]),
            )
            state["files"][i] = rng.choice(["a.jsonl", "b.jsonl"])
        return
    i = rng.choice(live)
    record = state["records"][i]
    if op == "change":
        record["title"] = f"t{rng.randint(0, 9)}"
    elif op == "correct":
        record["corrections"] = [
            *record.get("corrections", []),
            {"at": f"2026-02-0{rng.randint(1, 9)}T00:00:00Z", "text": "c"},
        ]
        record["corrections"].sort(key=lambda c: c["at"])
    elif op == "retract":
        record["retracted"] = {"at": "2026-02-01T00:00:00Z", "reason": f"r{rng.randint(0, 2)}"}
    elif op == "unretract":
        retracted_ids = [j for j in live if "retracted" in state["records"][j]]
        if retracted_ids:
            del state["records"][rng.choice(retracted_ids)]["retracted"]
    elif op == "remove":
        state["gone"][i] = state["records"].pop(i)
    elif op == "readd" and state["gone"]:
        j = rng.choice(sorted(state["gone"]))
        state["records"][j] = state["gone"].pop(j)
    elif op == "move":
        state["files"][i] = "moved.jsonl" if state["files"][i] != "moved.jsonl" else "a.jsonl"


def _write(src: Path, state: dict[str, Any]) -> None:
    if src.exists():
        shutil.rmtree(src)
    files: dict[str, list[dict[str, Any]]] = {}
    seen_stories: set[tuple[str, str]] = set()
    for i in sorted(state["records"]):
        record = dict(state["records"][i])
        key = (record["language"], record.get("story_id"))
        if key[1] is not None and (key in seen_stories or "retracted" in record):
            record["story_id"] = None  # one article per story and language
        if key[1] is not None:
            seen_stories.add(key)  # type: ignore[arg-type]
        files.setdefault(state["files"][i], []).append(record)
    for name, records in files.items():
        write_jsonl(src / name, records)
    if not files:
        write_jsonl(src / "a.jsonl", [])


class Mirror:
    """A client that applies every item: id -> ("upsert", updated_at) or ("retracted", None)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.state: dict[str, tuple[str, str | None]] = {}
        self.cursor: str | None = None

    def follow(self, client: TestClient, limit: int, pages: int | None = None) -> bool:
        """Follow `next` until `more` is false (True), or for `pages` pages (False if more
        remain: a publish may come in the middle of a walk)."""
        while pages is None or pages > 0:
            pages = None if pages is None else pages - 1
            params: dict[str, Any] = {"limit": limit}
            if self.cursor is not None:
                params["since"] = self.cursor
            r = get(client, self.language, **params)
            assert r.status_code == 200, r.text
            ids = [i["id"] for i in r.json["items"]]
            assert len(ids) == len(set(ids))
            for item in r.json["items"]:
                if item["kind"] == "removed":
                    self.state.pop(item["id"], None)
                else:
                    self.state[item["id"]] = (item["kind"], item["updated_at"])
            self.cursor = r.json["next"]
            if not r.json["more"]:
                # `more` false: asking again now returns nothing.
                again = get(client, self.language, since=self.cursor, limit=limit)
                assert again.json["items"] == [] and again.json["next"] == self.cursor
                return True
        return False

    def check(self, client: TestClient, universe: set[str]) -> None:
        for i in sorted(universe):
            if not i.startswith(self.language):
                continue
            r = client.simulate_get(f"/api/v1/{self.language}/articles/{quote(i, safe='')}")
            if r.status_code == 200:
                assert self.state.get(i) == ("upsert", r.json["updated_at"]), i
            elif r.status_code == 410:
                assert self.state.get(i) == ("retracted", None), i
            else:
                assert r.status_code == 404 and i not in self.state, i
        assert set(self.state) <= universe


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(st.sampled_from(OPS), min_size=2, max_size=7),
    seed=st.integers(0, 10**6),
    start=st.integers(0, 6),
    limit=st.sampled_from([1, 2, 3, 100]),
    pages=st.sampled_from([None, 1]),
)
def test_a_mirror_ends_with_exactly_what_is_served(
    tmp_path_factory: pytest.TempPathFactory,
    ops: list[str],
    seed: int,
    start: int,
    limit: int,
    pages: int | None,
) -> None:
    """`pages`: None, the client follows to the end after each publish; 1, it reads one page
    per publish, so publishes land in the middle of its walk, and it is checked whenever it
    reaches the end, and at the end."""
    tmp = tmp_path_factory.mktemp("mirror")
    src, out = tmp / "src", tmp / "out"
    rng = random.Random(seed)
    state: dict[str, Any] = {"records": {}, "gone": {}, "files": {}, "n": 0}
    universe: set[str] = set()
    mirrors: list[Mirror] = []
    _mutate(state, "add", rng)
    for step, op in enumerate(["add", *ops]):
        if step:
            _mutate(state, op, rng)
        universe |= set(state["records"])
        _write(src, state)
        builder.build_report(src, out, jobs=1, publish_time=T0 + step * HOUR_US)
        client = client_for(out, tmp / "db")
        if step == min(start, len(ops)):
            mirrors = [Mirror(language) for language in LANGS]
        for mirror in mirrors:
            if mirror.follow(client, limit, pages):
                mirror.check(client, universe)
    assert mirrors
    for mirror in mirrors:
        mirror.follow(client, limit)
        mirror.check(client, universe)


@pytest.mark.parametrize("odd", [False, True])
def test_composed_pages_are_the_bodies_item_by_item(tmp_path: Path, odd: bool) -> None:
    """The fast composition (rows and id bytes) writes what orjson writes item by item; ids
    that JSON must escape and fractional seconds take the item-by-item path."""
    src, out = tmp_path / "src", tmp_path / "out"
    ids = ["a", "경제-1", "b c", *(['q"x', "b\\s"] if odd else [])]
    updated = "2026-01-02T03:04:05.25Z" if odd else "2026-01-02T03:04:05Z"
    records = [good(i, updated_at=updated) for i in ids] + [retracted(good("r")), good("z")]
    publish(src, out, records, T0)
    publish(src, out, records[:-1], T0 + HOUR_US)  # z removed
    log = Bundle.load(out).languages["en"].changes
    for start in (log.start(), changes.Cursor(log.lineage, "en", 0)):
        for limit in (1, 2, 1000):
            page = log.page(start, limit)
            body = page.body()
            tail = body[body.rindex(b'],"next":') :]
            assert body == changes._slow_body(page.items(), tail)
            parsed = orjson.loads(body)
            assert [i["id"] for i in parsed["items"]] == [i for i, *_ in page.items()]
            for item in parsed["items"]:
                if item["kind"] == "upsert":
                    assert item["updated_at"] == updated
