"""Every rejection case of docs/api.md §6.

Each case writes a source tree whose third line is bad (line 1 good, line 2 blank), runs the
builder against an OUT_DIR that already holds a good bundle, and checks: non-zero exit, a
message naming `file:line` and the field, and OUT_DIR byte-for-byte unchanged with no
temporary directory left behind.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.builder import builder, cli
from app.builder.records import SourceError
from app.config import PROJECT_ROOT
from tests.helpers import good, leftovers, tree_digest, write_jsonl

SCRIPT = PROJECT_ROOT / "scripts" / "build_bundles.py"


def without(field: str) -> dict[str, Any]:
    record = good("bad-1")
    del record[field]
    return record


REQUIRED = ("id", "language", "title", "summary", "content", "category", "published_at")

# (case name, the bad third line, the field the message must name or a phrase for no field)
CASES: list[tuple[str, dict[str, Any] | str | bytes, str]] = [
    ("invalid-json", '{"id": "x", "language": "en",', "invalid JSON"),
    ("invalid-json-trailing", '{"id": "x"} trailing', "invalid JSON"),
    ("invalid-utf8", b'{"id": "\xff\xfe", "language": "en"}', "invalid JSON"),
    ("not-an-object", "[1, 2, 3]", "JSON object"),
    *[(f"missing-{f}", without(f), f"'{f}'") for f in REQUIRED],
    *[(f"number-{f}", good("bad-1", **{f: 7}), f"'{f}'") for f in REQUIRED if f != "id"],
    *[(f"null-{f}", good("bad-1", **{f: None}), f"'{f}'") for f in REQUIRED],
    ("number-id", good(**{"id": 12345}), "'id'"),
    ("list-title", good("bad-1", title=["a"]), "'title'"),
    ("object-category", good("bad-1", category={"x": 1}), "'category'"),
    ("bool-summary", good("bad-1", summary=True), "'summary'"),
    ("tags-string", good("bad-1", tags="politics"), "'tags'"),
    ("tags-number-item", good("bad-1", tags=["ok", 3]), "'tags'"),
    ("tags-object", good("bad-1", tags={"a": "b"}), "'tags'"),
    ("author-number", good("bad-1", author=5), "'author'"),
    ("image-url-list", good("bad-1", image_url=["https://x"]), "'image_url'"),
    ("updated-at-number", good("bad-1", updated_at=1700000000), "'updated_at'"),
    ("published-at-garbage", good("bad-1", published_at="yesterday"), "'published_at'"),
    ("published-at-bad-date", good("bad-1", published_at="2026-02-30T00:00:00Z"), "'published_at'"),
    ("published-at-date-only", good("bad-1", published_at="2026-01-01"), "'published_at'"),
    ("unsupported-language", good("bad-1", language="xx"), "'language'"),
    ("language-uppercase", good("bad-1", language="EN"), "'language'"),
    ("language-dash", good("bad-1", language="zh-TW"), "'language'"),
    ("reserved-latest", good("latest"), "'id'"),
    ("reserved-search", good("search"), "'id'"),
    ("empty-id", good(""), "'id'"),
    ("long-id", good("x" * 201), "'id'"),
    ("long-non-ascii-id", good("경" * 201), "'id'"),
    ("slash-id", good("a/b"), "'id'"),
    ("slash-only-id", good("/"), "'id'"),
    ("newline-id", good("a\nb"), "'id'"),
    ("nul-id", good("a\x00b"), "'id'"),
    ("tab-id", good("a\tb"), "'id'"),
    ("del-id", good("a\x7fb"), "'id'"),
    ("c1-control-id", good("a\x85b"), "'id'"),
    ("published-no-offset", good("bad-1", published_at="2026-01-01T00:00:00"), "'published_at'"),
    (
        "published-no-offset-fraction",
        good("bad-1", published_at="2026-01-01T00:00:00.123"),
        "'published_at'",
    ),
    ("updated-no-offset", good("bad-1", updated_at="2026-01-02T00:00:00"), "'updated_at'"),
    # Valid RFC 3339, but out of range once normalised to UTC.
    (
        "published-before-year-1",
        good("bad-1", published_at="0001-01-01T00:30:00+01:00"),
        "'published_at'",
    ),
    (
        "updated-after-year-9999",
        good("bad-1", updated_at="9999-12-31T23:00:00-05:00"),
        "'updated_at'",
    ),
]


@pytest.fixture(scope="module")
def previous_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good bundle, built once by the CLI (building fsyncs every file, so it is slow)."""
    root = tmp_path_factory.mktemp("previous")
    src = root / "good-src"
    write_jsonl(src / "a.jsonl", [good("previous-1"), good("previous-2", language="ko")])
    out = root / "out"
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    assert (out / "manifest.json").is_file()
    return out


@pytest.fixture
def out_with_bundle(tmp_path: Path, previous_bundle: Path) -> Path:
    """An OUT_DIR that already holds a good bundle (the thing a failed build must not touch)."""
    out = tmp_path / "out"
    shutil.copytree(previous_bundle, out)
    return out


def _assert_rejected(
    out: Path, before: dict[str, str], rc: int, stderr: str, where: str, needle: str
) -> None:
    assert rc != 0
    assert where in stderr, stderr
    problem_lines = [line for line in stderr.splitlines() if where in line]
    assert any(needle in line for line in problem_lines), stderr
    assert "unchanged" in stderr
    assert tree_digest(out) == before
    assert leftovers(out) == []


@pytest.mark.parametrize(("line", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rejected_by_cli(
    tmp_path: Path,
    out_with_bundle: Path,
    capsys: pytest.CaptureFixture[str],
    line: dict[str, Any] | str | bytes,
    needle: str,
) -> None:
    src = tmp_path / "src"
    path = write_jsonl(src / "news.jsonl", [good("fine-1"), "", line, good("fine-2")])
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    stderr = capsys.readouterr().err
    _assert_rejected(out_with_bundle, before, rc, stderr, f"{path}:3", needle)
    # Only the bad line is reported: the good lines around it and the blank line are fine.
    assert f"{path}:1" not in stderr and f"{path}:2" not in stderr and f"{path}:4" not in stderr


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"broken": ', "invalid JSON"),
        (good("bad-1", language="xx"), "'language'"),
        (good("bad-1", published_at="2026-01-01T00:00:00"), "'published_at'"),
        (good("a/b"), "'id'"),
    ],
    ids=["invalid-json", "language", "no-offset", "slash"],
)
def test_rejected_by_real_script(
    tmp_path: Path, out_with_bundle: Path, line: dict[str, Any] | str, needle: str
) -> None:
    src = tmp_path / "src"
    path = write_jsonl(src / "news.jsonl", [good("fine-1"), "", line])
    before = tree_digest(out_with_bundle)
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--src", str(src), "--out", str(out_with_bundle)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,  # the script must not depend on the working directory
    )
    _assert_rejected(out_with_bundle, before, proc.returncode, proc.stderr, f"{path}:3", needle)


def test_duplicate_id_within_language(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    first = write_jsonl(src / "a.jsonl", [good("dup"), good("other")])
    second = write_jsonl(src / "b.jsonl", ["", good("dup", title="again")])
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    stderr = capsys.readouterr().err
    _assert_rejected(out_with_bundle, before, rc, stderr, f"{second}:2", "'id'")
    # The message points at the first occurrence too.
    assert f"{first}:1" in stderr


def test_duplicate_id_within_one_file(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    path = write_jsonl(src / "a.jsonl", [good("dup"), good("x"), good("dup", language="en")])
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    _assert_rejected(out_with_bundle, before, rc, capsys.readouterr().err, f"{path}:3", "'id'")


@pytest.mark.parametrize("state", ["unchanged file", "no unchanged file"])
def test_a_served_articles_line_given_again_names_the_first(
    tmp_path: Path,
    previous_bundle: Path,
    out_with_bundle: Path,
    capsys: pytest.CaptureFixture[str],
    state: str,
) -> None:
    """The line of a served article given again, after its copy in a file the build state
    says is unchanged or earlier in the same file: each copy after the first is a problem
    naming the first."""
    src = tmp_path / "src"
    src.mkdir()
    served = previous_bundle.parent / "good-src" / "a.jsonl"
    lines = served.read_bytes().splitlines()
    copies = src / "b.jsonl"
    copies.write_bytes(b"\n".join([lines[1], lines[0], lines[1]]) + b"\n")
    if state == "unchanged file":
        shutil.copy2(served, src / "a.jsonl")  # same path, size and mtime: not read again
        expected = {1: src / "a.jsonl:2", 2: src / "a.jsonl:1", 3: src / "a.jsonl:2"}
    else:
        expected = {3: f"{copies}:1"}
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    stderr = capsys.readouterr().err
    for line, first in expected.items():
        needle = f"same article as {first}"
        _assert_rejected(out_with_bundle, before, rc, stderr, f"{copies}:{line}", needle)
    assert stderr.count("same article as") == len(expected), stderr


def test_same_id_in_two_languages_is_accepted(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("same"), good("same", language="fr", title="Le titre")])
    out = tmp_path / "out"
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    assert (out / "manifest.json").is_file()


@pytest.mark.parametrize("article_id", ["x" * 200, "경" * 200, "Latest", "latest-news", "100%"])
def test_boundary_ids_are_accepted(tmp_path: Path, article_id: str) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good(article_id)])
    assert cli.main(["--src", str(src), "--out", str(tmp_path / "out")]) == 0


def test_all_problems_reported_together(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    a = write_jsonl(src / "a.jsonl", [good("ok-1"), good("latest")])
    b = write_jsonl(src / "sub" / "b.jsonl", ["", "", good("ok-2", language="xx")])
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    stderr = capsys.readouterr().err
    _assert_rejected(out_with_bundle, before, rc, stderr, f"{a}:2", "'id'")
    _assert_rejected(out_with_bundle, before, rc, stderr, f"{b}:3", "'language'")


def test_missing_or_empty_source(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree_digest(out_with_bundle)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no jsonl here")
    for src in (tmp_path / "does-not-exist", empty):
        capsys.readouterr()
        rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
        stderr = capsys.readouterr().err
        assert rc != 0
        assert str(src) in stderr
        assert tree_digest(out_with_bundle) == before
        assert leftovers(out_with_bundle) == []


def test_first_build_failure_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("latest")])
    out = tmp_path / "new-out"
    assert cli.main(["--src", str(src), "--out", str(out)]) != 0
    assert not out.exists()
    assert leftovers(out) == []


def test_duplicate_story_id_within_language(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    first = write_jsonl(src / "a.jsonl", [good("a", story_id="s"), good("fr-a", language="fr")])
    second = write_jsonl(src / "b.jsonl", [good("b", story_id="s")])
    before = tree_digest(out_with_bundle)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out_with_bundle)])
    stderr = capsys.readouterr().err
    _assert_rejected(out_with_bundle, before, rc, stderr, f"{second}:1", "'story_id'")
    assert f"{first}:1" in stderr


def test_duplicate_story_id_against_a_kept_article(tmp_path: Path) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    first = write_jsonl(src / "a.jsonl", [good("a", story_id="s"), good("x")])
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    before = tree_digest(out)
    second = write_jsonl(src / "b.jsonl", [good("b", story_id="s")])
    with pytest.raises(SourceError) as exc:
        builder.build(src, out, jobs=1)
    assert exc.value.problems == [
        f"{second}:1: field 'story_id': duplicate story_id 's' in language 'en' "
        f"(first at {first}:1)"
    ]
    assert tree_digest(out) == before


@pytest.mark.parametrize("story_id", [7, "", "a\x01b", "x" * 201, ["s"]])
def test_bad_story_id(tmp_path: Path, out_with_bundle: Path, story_id: object) -> None:
    src = tmp_path / "src"
    path = write_jsonl(src / "a.jsonl", [good("fine"), good("bad", story_id=story_id)])
    before = tree_digest(out_with_bundle)
    with pytest.raises(SourceError) as exc:
        builder.build(src, out_with_bundle, jobs=1)
    assert len(exc.value.problems) == 1
    assert exc.value.problems[0].startswith(f"{path}:2: field 'story_id': ")
    assert tree_digest(out_with_bundle) == before


def test_same_story_in_two_languages_is_one_story(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write_jsonl(src / "a.jsonl", [good("a", story_id="s"), good("b", language="fr", story_id="s")])
    assert cli.main(["--src", str(src), "--out", str(tmp_path / "out")]) == 0


def test_failure_reports_say_what_failed_and_that_out_is_unchanged(
    tmp_path: Path, out_with_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The builder's and the installer's command lines end a failure the same way
    (app.bundle.commit.report_unchanged): what failed, each problem indented, then the
    untouched directory."""
    from app.bundle import install

    src = tmp_path / "src"
    path = write_jsonl(src / "news.jsonl", [good("fine-1"), "not json"])
    capsys.readouterr()
    assert cli.main(["--src", str(src), "--out", str(out_with_bundle)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"build failed: 1 problem(s) in {src}"
    assert len(lines) == 3 and lines[1].startswith(f"  {path}:2")
    assert lines[2] == f"{out_with_bundle} was left unchanged."

    before = tree_digest(out_with_bundle)
    assert install.main([str(tmp_path / "no-bundle"), str(out_with_bundle)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("install failed: ") and len(lines) == 2
    assert lines[1] == f"{out_with_bundle} was left unchanged."
    assert tree_digest(out_with_bundle) == before
