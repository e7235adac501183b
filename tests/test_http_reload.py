"""Live pick-up of new bundles; corrupt or incompatible bundles refused (README, pipeline)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import falcon
import pytest
from falcon.testing import TestClient

from app.builder.builder import build
from app.bundle.language import LanguageData
from app.bundle.reader import Bundle, BundleError, BundleUnavailable
from app.bundle.store import BundleStore
from app.config import PROJECT_ROOT, Settings
from app.languages import LANGUAGES
from app.wsgi import create_app
from tests.helpers import article_path, bundle_object, good, write_jsonl

INTERVAL = 0.05


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(INTERVAL / 2)
    return condition()


def make_source(root: Path, ids: list[str]) -> Path:
    src = root
    write_jsonl(
        src / "a.jsonl",
        [good(i, published_at=f"2026-01-{n + 1:02d}T00:00:00Z") for n, i in enumerate(ids)],
    )
    return src


@pytest.fixture
def served(tmp_path: Path) -> Path:
    out = tmp_path / "served"
    build(make_source(tmp_path / "v1", ["one", "two"]), out)
    return out


def app_for(bundle_dir: Path, tmp_path: Path) -> falcon.App:
    return create_app(
        Settings(
            bundle_dir=bundle_dir,
            comments_dsn=f"sqlite:///{tmp_path}/c.sqlite3",
            bundle_check_interval=INTERVAL,
        )
    )


def test_store_switches_to_a_new_build(served: Path, tmp_path: Path) -> None:
    store = BundleStore(served, check_interval=INTERVAL)
    old = store.current()
    assert old.has_article("en", "one") and not old.has_article("en", "three")
    new_id = build(make_source(tmp_path / "v2", ["one", "two", "three"]), served)
    assert new_id != old.bundle_id
    assert wait_for(lambda: store.current().bundle_id == new_id)
    assert store.current().has_article("en", "three")
    # A request still holding the old bundle finishes on it: its mapped bytes stay valid
    # after the builder deleted the old directory.
    data = old.languages["en"]
    gid = data.find("one")
    assert gid is not None
    run = data.run_by_gid(gid)
    assert json.loads(run.segment.record(run.start).tobytes())["id"] == "one"
    assert data.count == 2


def test_store_checks_at_most_once_per_interval(served: Path, tmp_path: Path) -> None:
    store = BundleStore(served, check_interval=3600)
    first = store.current().bundle_id
    build(make_source(tmp_path / "v2", ["three"]), served)
    assert store.current().bundle_id == first  # not due yet
    assert store.refresh() is True  # an explicit refresh (e.g. on SIGHUP) loads it now
    assert store.current().bundle_id != first
    assert store.refresh() is False  # nothing new


def test_app_serves_the_new_bundle(served: Path, tmp_path: Path) -> None:
    client = TestClient(app_for(served, tmp_path))
    before = client.simulate_get("/api/v1/en/articles")
    assert [i["id"] for i in before.json["items"]] == ["two", "one"]
    assert client.simulate_get(article_path("en", "three")).status_code == 404
    old_ready = client.simulate_get("/ready").json["bundle"]

    new_id = build(make_source(tmp_path / "v2", ["one", "two", "three"]), served)
    assert wait_for(lambda: client.simulate_get(article_path("en", "three")).status_code == 200)
    after = client.simulate_get("/api/v1/en/articles")
    assert [i["id"] for i in after.json["items"]] == ["three", "two", "one"]
    assert after.headers["etag"] != before.headers["etag"]
    # The old validator no longer matches: a client revalidating gets the new body.
    revalidated = client.simulate_get(
        "/api/v1/en/articles", headers={"If-None-Match": before.headers["etag"]}
    )
    assert revalidated.status_code == 200
    ready = client.simulate_get("/ready").json
    assert ready == {"status": "ready", "bundle": new_id} and new_id != old_ready


# -- corrupt or incompatible bundles --------------------------------------------------------


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_bytes())


def _truncate(bundle: Path) -> None:
    path = bundle_object(bundle, "en", "articles.bin")
    path.write_bytes(path.read_bytes()[:-1])


def _flip_byte(bundle: Path) -> None:
    path = bundle_object(bundle, "en", "articles.bin")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))  # same size: only the CRC-32 check can tell


def _edit_manifest(**changes: object) -> Callable[[Path], None]:
    def edit(bundle: Path) -> None:
        path = bundle / "manifest.json"
        manifest = json.loads(path.read_bytes())
        manifest.update(changes)
        path.write_text(json.dumps(manifest))

    return edit


def _manifest_not_json(bundle: Path) -> None:
    (bundle / "manifest.json").write_text('{"format": "news-bundle", ')


def _missing_file(bundle: Path) -> None:
    bundle_object(bundle, "ko", "ids.bin").unlink()


def _copied_without_record_and_bad_checksum(bundle: Path) -> None:
    # A bundle copied by hand (no verified.json) is checked byte for byte against the CRC-32s.
    (bundle / "verified.json").unlink()
    manifest = _manifest(bundle)
    name = bundle_object(bundle, "ja", "categories.json").name
    manifest["objects"][name]["crc32"] ^= 1
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _tampered_content_hash(bundle: Path) -> None:
    # The bundle id is derived from the languages' content hashes.
    manifest = _manifest(bundle)
    manifest["languages"]["ja"]["content_hash"] = "0" * 20
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _bad_object_entry(bundle: Path) -> None:
    manifest = _manifest(bundle)
    manifest["objects"][bundle_object(bundle, "en", "articles.bin").name] = 5
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _bad_language_entry(bundle: Path) -> None:
    manifest = _manifest(bundle)
    manifest["languages"]["en"]["categories"] = [["politics"]]
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _feed_index_disagrees(bundle: Path) -> None:
    manifest = _manifest(bundle)
    del manifest["languages"]["en"]["feeds"][""]  # feeds.json still lists the language feed
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def _no_site_entry(bundle: Path) -> None:
    manifest = _manifest(bundle)
    del manifest["site"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated-file": (_truncate, "truncated"),
    "flipped-byte": (_flip_byte, "checksum"),
    "format-version": (_edit_manifest(format_version=99), "format version"),
    "format-name": (_edit_manifest(format="something-else"), "manifest"),
    "manifest-not-json": (_manifest_not_json, "JSON"),
    "missing-file": (_missing_file, "No such file"),
    "copied-with-bad-checksum": (_copied_without_record_and_bad_checksum, "checksum"),
    "tampered-content-hash": (_tampered_content_hash, "bundle_id"),
    "tampered-bundle-id": (_edit_manifest(bundle_id="0" * 20), "bundle_id"),
    "object-entry-not-object": (_bad_object_entry, "no entry"),
    "language-entry-mistyped": (_bad_language_entry, "language en"),
    "feed-index-disagrees": (_feed_index_disagrees, "feed objects"),
    "site-entry-missing": (_no_site_entry, "site"),
}


def _ship(staged: Path, served: Path) -> None:
    """Swap a staged bundle into the served path, as an operator shipping a directory would."""
    aside = served.with_name(served.name + ".previous")
    os.rename(served, aside)
    os.rename(staged, served)
    shutil.rmtree(aside)


@pytest.mark.parametrize("kind", list(CORRUPTIONS))
def test_corrupt_new_bundle_is_refused_and_old_keeps_serving(
    served: Path, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    corrupt, reason = CORRUPTIONS[kind]
    client = TestClient(app_for(served, tmp_path))
    old_id = client.simulate_get("/ready").json["bundle"]
    old_list = client.simulate_get("/api/v1/en/articles").content

    staged = tmp_path / "staged"
    build(make_source(tmp_path / "v2", ["one", "two", "three"]), staged)
    corrupt(staged)
    with pytest.raises(BundleError, match=reason):
        Bundle.load(staged)

    caplog.set_level(logging.INFO, logger="app.bundle")
    _ship(staged, served)
    # The store looks for new bundles from the request path: keep requesting.
    assert wait_for(
        lambda: (
            client.simulate_get("/health").status_code == 200
            and client.simulate_get("/ready").json["bundle"] == old_id
            and "refusing new bundle" in caplog.text
        )
    )
    refusals = [r for r in caplog.records if "refusing new bundle" in r.getMessage()]
    assert refusals[0].levelno >= logging.ERROR
    assert reason in refusals[0].getMessage() and old_id in refusals[0].getMessage()

    # The old bundle keeps serving, unchanged, and is not retried on every request.
    for _ in range(5):
        ready = client.simulate_get("/ready")
        assert ready.status_code == 200
        assert ready.json["status"] == "ready" and ready.json["bundle"] == old_id
        assert reason in ready.json["rejected_bundle"]  # the operator sees the refusal
        assert client.simulate_get("/api/v1/en/articles").content == old_list
        assert client.simulate_get(article_path("en", "three")).status_code == 404
        time.sleep(INTERVAL)
    assert len([r for r in caplog.records if "refusing new bundle" in r.getMessage()]) == 1

    # A good build after the bad one is picked up.
    new_id = build(make_source(tmp_path / "v3", ["one", "two", "three", "four"]), served)
    assert wait_for(lambda: client.simulate_get("/ready").json["bundle"] == new_id)
    assert "rejected_bundle" not in client.simulate_get("/ready").json
    assert client.simulate_get(article_path("en", "four")).status_code == 200


def test_bundle_dir_missing_while_serving(served: Path, tmp_path: Path) -> None:
    client = TestClient(app_for(served, tmp_path))
    old_id = client.simulate_get("/ready").json["bundle"]
    aside = tmp_path / "aside"
    os.rename(served, aside)  # an operator mid-swap: nothing there for a moment
    time.sleep(INTERVAL * 3)
    assert client.simulate_get("/ready").json["bundle"] == old_id
    assert client.simulate_get(article_path("en", "one")).status_code == 200
    os.rename(aside, served)


# Damage to objects alone (the manifest is sound) does not stop a worker from starting: it
# starts not ready and answers 503 for what reads them, so that a worker respawned on a
# damaged directory cannot crash in a loop (docs/reliability.md, "Damaged bundle files").
OBJECT_DAMAGE = ("truncated-file", "flipped-byte", "missing-file", "copied-with-bad-checksum")


@pytest.mark.parametrize("kind", [kind for kind in CORRUPTIONS if kind not in OBJECT_DAMAGE])
def test_create_app_refuses_corrupt_bundle(tmp_path: Path, kind: str) -> None:
    corrupt, reason = CORRUPTIONS[kind]
    out = tmp_path / "bundle"
    build(make_source(tmp_path / "src", ["one"]), out)
    corrupt(out)
    with pytest.raises(BundleError, match=reason):
        app_for(out, tmp_path)


@pytest.mark.parametrize("kind", OBJECT_DAMAGE)
def test_create_app_starts_not_ready_on_damaged_objects(tmp_path: Path, kind: str) -> None:
    corrupt, reason = CORRUPTIONS[kind]
    out = tmp_path / "bundle"
    build(make_source(tmp_path / "src", ["one"]), out)
    good_bodies = {
        language: Bundle.load(out).languages[language].categories_encoded["identity"]
        for language in LANGUAGES
    }
    manifest = _manifest(out)
    corrupt(out)
    with pytest.raises(BundleError, match=reason):
        Bundle.load(out)
    partial = Bundle.load(out, partial=True)
    assert len(partial.damage) == 1 and reason in next(iter(partial.damage.values()))
    (damaged,) = partial.damage
    # The oracle: the languages whose manifest entries name the damaged object.
    readers = {
        language
        for language, meta in manifest["languages"].items()
        if damaged
        in {*meta["files"].values(), *meta["feeds"].values()}
        | {name for seg in meta["segments"] for name in seg["files"].values()}
    }
    assert readers

    client = TestClient(app_for(out, tmp_path))
    ready = client.simulate_get("/ready")
    assert ready.status_code == 503
    assert damaged in ready.json["detail"] and reason in ready.json["detail"]
    for language in LANGUAGES:
        response = client.simulate_get(f"/api/v1/{language}/categories")
        if language in readers:
            assert response.status_code == 503, language
            assert "damaged" in response.json["detail"]
            assert response.headers["retry-after"] == "5"
            assert response.headers["cache-control"] == "no-store"
        else:
            assert response.status_code == 200, language
            assert response.content == good_bodies[language]


def test_create_app_refuses_missing_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no-bundle-here"):
        app_for(tmp_path / "no-bundle-here", tmp_path)


@pytest.mark.parametrize("kind", ["missing", "format-version"])
def test_importing_wsgi_app_exits_with_clear_message(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "bundle"
    if kind == "format-version":
        build(make_source(tmp_path / "src", ["one"]), out)
        _edit_manifest(format_version=99)(out)
    env = {
        **os.environ,
        "NEWS_BUNDLE_DIR": str(out),
        "NEWS_COMMENTS_DSN": f"sqlite:///{tmp_path}/c.sqlite3",
    }
    proc = subprocess.run(
        [sys.executable, "-c", "from app.wsgi import app"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT_ROOT,
        env=env,
    )
    assert proc.returncode != 0
    assert "cannot start" in proc.stderr
    assert str(out) in proc.stderr
    assert "Traceback" not in proc.stderr
    if kind == "format-version":
        assert "format version 99" in proc.stderr


def test_forked_worker_checks_disk_on_first_request(served: Path, tmp_path: Path) -> None:
    """gunicorn preloads in the master and forks workers (also after SIGHUP): a fresh worker
    must look at the disk at once rather than inherit the master's next-check time."""
    store = BundleStore(served, check_interval=3600)
    old_id = store.current().bundle_id
    new_id = build(make_source(tmp_path / "v2", ["three"]), served)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the "worker"
        try:
            os.write(write_fd, store.current().bundle_id.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    child_saw = os.read(read_fd, 100).decode()
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert child_saw == new_id
    assert store.current().bundle_id == old_id  # the "master" keeps its schedule


def _first_article(data: LanguageData) -> bytes:
    """The newest article's JSON, read as a list page reads it."""
    return data.runs(0, 1)[0].encoded("articles", "identity").tobytes()


def test_cp_of_the_same_bundle_over_the_served_one_heals(served: Path, tmp_path: Path) -> None:
    """`cp -r` of the bundle over its own served directory: every file is truncated, then
    written again in place, the manifest included. Seen half-way, the store stops serving
    what is damaged (and refuses the half-copied generation); once the copy is complete it
    serves the whole bundle again, without a restart."""
    store = BundleStore(served, check_interval=3600)  # driven by hand: refresh()
    before = store._bundle
    body = _first_article(before.languages["en"])
    files = sorted(p for p in served.rglob("*") if p.is_file())
    saved = {p: p.read_bytes() for p in files}
    half = len(files) // 2
    for path in files[:half]:
        os.chmod(path, 0o644)
        with open(path, "wb") as fh:  # O_TRUNC, as cp does, then the same bytes
            fh.write(saved[path])
    for path in files[half:]:
        os.chmod(path, 0o644)
        os.truncate(path, 0)  # cp has not got to these yet
    store.refresh()
    assert store._bundle.damage and store.damage_report() is not None
    with pytest.raises(BundleUnavailable):
        _first_article(store._bundle.languages["en"])
    for path in files[half:]:
        path.write_bytes(saved[path])
    for _ in range(3):  # the files changed: the refused manifest is tried again
        store.refresh()
    assert not store._bundle.damage and store.damage_report() is None
    assert store.rejection is None
    assert store._bundle.bundle_id == before.bundle_id
    assert _first_article(store._bundle.languages["en"]) == body
