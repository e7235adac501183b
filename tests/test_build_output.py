"""The builder's output: content, determinism, atomic replacement, locking (docs/api.md §6)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.builder import builder, cli
from app.bundle.reader import Bundle, BundleError
from app.config import PROJECT_ROOT
from app.languages import LANGUAGES
from tests.helpers import (
    bundle_files,
    expected_article,
    expected_categories,
    expected_order,
    good,
    leftovers,
    tree_digest,
    write_jsonl,
)

SCRIPT = PROJECT_ROOT / "scripts" / "build_bundles.py"


def articles_in(bundle: Bundle, language: str) -> list[dict[str, Any]]:
    data = bundle.languages[language]
    runs = data.runs(0, data.count)
    return [orjson.loads(run.segment.record(i)) for run in runs for i in range(run.start, run.stop)]


def test_bundle_holds_every_article_in_list_order(
    bundle: tuple[Path, str], records: list[dict[str, Any]]
) -> None:
    loaded = Bundle.load(bundle[0])
    assert loaded.bundle_id == bundle[1]
    assert set(loaded.languages) == set(LANGUAGES)
    for language in LANGUAGES:
        assert articles_in(loaded, language) == expected_order(records, language)
        categories = orjson.loads(loaded.languages[language].categories_encoded["identity"])
        assert categories == expected_categories(records, language)


def test_timestamps_normalised_to_utc(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(
        src / "a.jsonl",
        [
            good("east", published_at="2026-03-01T09:00:00+09:00"),
            good("west", published_at="2026-02-28T19:00:00-05:00"),
            good(
                "zulu", published_at="2026-03-01T00:00:00Z", updated_at="2026-03-01T05:30:00+05:30"
            ),
            good("year", published_at="2026-01-01T02:00:00+09:00"),
            good("half", published_at="2026-06-30T23:45:00-00:30"),
        ],
    )
    out = tmp_path / "out"
    builder.build(src, out)
    got = {a["id"]: a for a in articles_in(Bundle.load(out), "en")}
    assert got["east"]["published_at"] == "2026-03-01T00:00:00Z"
    assert got["west"]["published_at"] == "2026-03-01T00:00:00Z"
    assert got["zulu"]["published_at"] == "2026-03-01T00:00:00Z"
    assert got["zulu"]["updated_at"] == "2026-03-01T00:00:00Z"
    assert got["year"]["published_at"] == "2025-12-31T17:00:00Z"
    assert got["half"]["published_at"] == "2026-07-01T00:15:00Z"
    # updated_at absent: equals published_at.
    for article_id in ("east", "west", "year", "half"):
        assert got[article_id]["updated_at"] == got[article_id]["published_at"]
    # Equal instants are ordered by id ascending.
    order = [a["id"] for a in articles_in(Bundle.load(out), "en")]
    assert order == ["half", "east", "west", "zulu", "year"]


def test_blank_lines_and_multiple_files(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", ["", "  \t ", good("one"), "", good("two", language="ja"), ""])
    (src / "nested" / "deeper").mkdir(parents=True)
    (src / "nested" / "deeper" / "b.jsonl").write_bytes(
        b"\r\n" + orjson.dumps(good("three", language="fr")) + b"\r\n\r\n"
    )
    (src / "c.jsonl").write_bytes(orjson.dumps(good("four")))  # no trailing newline
    (src / "ignored.json").write_text("{not json")
    (src / "ignored.txt").write_text("{not json")
    out = tmp_path / "out"
    builder.build(src, out)
    loaded = Bundle.load(out)
    assert sorted(a["id"] for a in articles_in(loaded, "en")) == ["four", "one"]
    assert [a["id"] for a in articles_in(loaded, "ja")] == ["two"]
    assert [a["id"] for a in articles_in(loaded, "fr")] == ["three"]
    assert articles_in(loaded, "de") == []


def test_optional_fields(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(
        src / "a.jsonl",
        [
            good("bare"),
            good("nulls", tags=None, author=None, image_url=None, updated_at=None),
            good("full", tags=["x", "경제"], author="A", image_url="https://i/1.png"),
        ],
    )
    out = tmp_path / "out"
    builder.build(src, out)
    got = {a["id"]: a for a in articles_in(Bundle.load(out), "en")}
    for article_id in ("bare", "nulls"):
        assert got[article_id]["tags"] == []
        assert got[article_id]["author"] is None
        assert got[article_id]["image_url"] is None
        assert got[article_id]["updated_at"] == got[article_id]["published_at"]
    full = good("full", tags=["x", "경제"], author="A", image_url="https://i/1.png")
    assert got["full"] == expected_article(full)


def test_same_input_gives_byte_identical_bundle(corpus_src: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    id_one = builder.build(corpus_src, one)
    id_two = builder.build(corpus_src, two)
    assert id_one == id_two
    first = bundle_files(one)
    assert first == bundle_files(two)
    assert "manifest.json" in first and len(first) > 9
    # Rebuilding into the same directory (an incremental build with nothing to do) keeps the
    # id and the bytes.
    assert builder.build(corpus_src, one) == id_one
    assert bundle_files(one) == first


def test_bundle_id_follows_content(corpus_src: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = builder.build(corpus_src, out)
    src2 = tmp_path / "src2"
    write_jsonl(src2 / "a.jsonl", [good("only-one")])
    assert builder.build(src2, out) != first


def test_determinism_across_processes_and_hash_seeds(corpus_src: Path, tmp_path: Path) -> None:
    """Set/dict iteration order must not leak into the bytes (PYTHONHASHSEED differs)."""
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out-{seed}"
        proc = subprocess.run(
            [sys.executable, str(SCRIPT), "--src", str(corpus_src), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert proc.returncode == 0, proc.stderr
        assert "built bundle" in proc.stdout
        outs.append(bundle_files(out))
    assert outs[0] == outs[1]


def test_good_build_replaces_previous_bundle(tmp_path: Path) -> None:
    src1, src2 = tmp_path / "s1", tmp_path / "s2"
    write_jsonl(src1 / "a.jsonl", [good("old-article")])
    write_jsonl(src2 / "a.jsonl", [good("new-article", language="ko")])
    out = tmp_path / "out"
    first_id = builder.build(src1, out)
    (out / "objects" / "stray-file").write_text("left by someone")  # not an object of ours
    new_id = builder.build(src2, out)
    loaded = Bundle.load(out)
    assert loaded.bundle_id == new_id
    assert loaded.languages["en"].count == 0
    assert [a["id"] for a in articles_in(loaded, "ko")] == ["new-article"]
    assert not (out / "objects" / "stray-file").exists()  # collected with unused objects
    assert leftovers(out) == []
    # The previous generation is kept for a rollback, with its objects.
    previous = orjson.loads((out / "manifest.previous.json").read_bytes())
    assert previous["bundle_id"] == first_id
    assert all((out / "objects" / name).is_file() for name in previous["objects"])


def test_empty_existing_directory_is_replaced(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("x")])
    out = tmp_path / "out"
    out.mkdir()
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    assert Bundle.load(out).languages["en"].count == 1


def test_nested_missing_parent_is_created(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("x")])
    out = tmp_path / "a" / "b" / "bundles"
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    assert Bundle.load(out).languages["en"].count == 1


@pytest.mark.parametrize("kind", ["non-bundle-dir", "file", "symlink"])
def test_refuses_to_replace_what_is_not_a_bundle(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("x")])
    out = tmp_path / "out"
    if kind == "non-bundle-dir":
        out.mkdir()
        (out / "precious.txt").write_text("do not delete")
    elif kind == "file":
        out.write_text("a file")
    else:
        target = tmp_path / "target"
        target.mkdir()
        (target / "precious.txt").write_text("do not delete")
        out.symlink_to(target)
    before = tree_digest(out)
    target_before = tree_digest(tmp_path / "target")
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out)])
    stderr = capsys.readouterr().err
    assert rc != 0
    assert str(out) in stderr
    assert tree_digest(out) == before
    assert tree_digest(tmp_path / "target") == target_before
    assert out.is_symlink() == (kind == "symlink")
    assert leftovers(out) == []


def test_concurrent_builds_run_one_after_the_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("x")])
    out = tmp_path / "out"
    builder.build(src, out)
    write_jsonl(src / "a.jsonl", [good("y")])
    before = tree_digest(out)
    lock_path = tmp_path / ".out.lock"
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another build holds the lock
        capsys.readouterr()
        # Told not to wait, a build is refused and changes nothing.
        rc = cli.main(["--src", str(src), "--out", str(out), "--wait", "0"])
        stderr = capsys.readouterr().err
        assert rc != 0
        assert "another build" in stderr
        assert tree_digest(out) == before
        assert leftovers(out) == []
        # By default a build waits for the one in progress (flock is per open file
        # description, so a separate process is held back as well).
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--src", str(src), "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=1.5)
            assert tree_digest(out) == before
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "built bundle" in stdout
    assert [a["id"] for a in articles_in(Bundle.load(out), "en")] == ["y"]


def test_readers_never_see_a_partial_bundle(tmp_path: Path) -> None:
    """While builds replace the directory over and over, every load sees a whole bundle."""
    sources = []
    for n in range(2):
        src = tmp_path / f"src{n}"
        write_jsonl(src / "a.jsonl", [good(f"v{n}-{i}") for i in range(5 + n)])
        sources.append(src)
    out = tmp_path / "out"
    builder.build(sources[0], out)
    stop = threading.Event()
    seen: set[int] = set()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                loaded = Bundle.load(out)
            except BundleError as exc:
                # The one tolerated failure: the directory this load opened was deleted by a
                # second build that finished while the load was running.
                if "No such file" not in str(exc):
                    failures.append(str(exc))
                continue
            ids = [a["id"] for a in articles_in(loaded, "en")]
            prefixes = {i.split("-")[0] for i in ids}
            if len(prefixes) != 1 or len(ids) not in (5, 6):
                failures.append(f"mixed bundle: {ids}")
            seen.add(len(ids))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for n in range(8):
            builder.build(sources[n % 2], out)
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert seen  # the reader really read bundles
