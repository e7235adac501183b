"""Every build failure rule of docs/api.md §11 (provenance, corrections, retracted).

Each case writes a source tree whose third line is bad (line 1 good, line 2 blank) and runs
the builder twice: from scratch (`--full`) and incrementally, over an OUT_DIR that already
holds a bundle with a retraction in it. Both must exit non-zero, print exactly one problem
`file:3: field '<field>': ...` naming the field down to the nested item, and leave OUT_DIR
byte for byte as it was.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from app.builder import cli
from app.models import NOTE_MAX, SOURCES_MAX
from tests.helpers import good, leftovers, tree_digest, write_jsonl

AT = "2026-01-02T00:00:00Z"


def with_(**changes: Any) -> dict[str, Any]:
    return good("bad-1", **changes)


def review(**changes: Any) -> dict[str, Any]:
    return with_(provenance={"reviewed_by": "Desk", "reviewed_at": AT, **changes})


URLS = [f"https://example.org/{i}" for i in range(SOURCES_MAX + 1)]

# (case, the bad third line, the field its one problem names, a phrase of the message)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("provenance-string", with_(provenance="ai"), "provenance", "valid dictionary"),
    ("provenance-list", with_(provenance=[]), "provenance", "valid dictionary"),
    (
        "source-type-unknown",
        with_(provenance={"source_type": "humanEdits"}),
        "provenance.source_type",
        "trainedAlgorithmicMedia",
    ),
    (
        "source-type-image-term",
        with_(provenance={"source_type": "digitalCapture"}),
        "provenance.source_type",
        "Input should be",
    ),
    (
        "source-type-number",
        with_(provenance={"source_type": 3}),
        "provenance.source_type",
        "Input should be",
    ),
    ("generator-number", with_(provenance={"generator": 7}), "provenance.generator", "string"),
    ("reviewed-by-alone", with_(provenance={"reviewed_by": "Desk"}), "provenance", "together"),
    ("reviewed-at-alone", with_(provenance={"reviewed_at": AT}), "provenance", "together"),
    ("reviewed-by-empty", review(reviewed_by=""), "provenance.reviewed_by", "at least 1"),
    ("reviewed-by-number", review(reviewed_by=5), "provenance.reviewed_by", "string"),
    (
        "reviewed-at-no-offset",
        review(reviewed_at="2026-01-02T00:00:00"),
        "provenance.reviewed_at",
        "offset",
    ),
    ("reviewed-at-garbage", review(reviewed_at="soon"), "provenance.reviewed_at", "RFC 3339"),
    ("sources-string", with_(provenance={"sources": URLS[0]}), "provenance.sources", "list"),
    ("sources-relative", with_(provenance={"sources": ["/a"]}), "provenance.sources.0", "http"),
    (
        "sources-ftp",
        with_(provenance={"sources": [URLS[0], "ftp://example.org/x"]}),
        "provenance.sources.1",
        "http",
    ),
    (
        "sources-no-host",
        with_(provenance={"sources": ["https:///path"]}),
        "provenance.sources.0",
        "http",
    ),
    (
        "sources-space",
        with_(provenance={"sources": ["https://example.org/a b"]}),
        "provenance.sources.0",
        "spaces",
    ),
    ("sources-number", with_(provenance={"sources": [1]}), "provenance.sources.0", "string"),
    ("sources-too-many", with_(provenance={"sources": URLS}), "provenance.sources", "at most 50"),
    ("corrections-object", with_(corrections={"at": AT}), "corrections", "valid list"),
    ("correction-string", with_(corrections=["oops"]), "corrections.0", "valid dictionary"),
    ("correction-no-at", with_(corrections=[{"text": "x"}]), "corrections.0.at", "required"),
    ("correction-no-text", with_(corrections=[{"at": AT}]), "corrections.0.text", "required"),
    (
        "correction-no-offset",
        with_(corrections=[{"at": "2026-01-02T00:00:00", "text": "x"}]),
        "corrections.0.at",
        "offset",
    ),
    (
        "correction-empty-text",
        with_(corrections=[{"at": AT, "text": "x"}, {"at": AT, "text": ""}]),
        "corrections.1.text",
        "at least 1",
    ),
    (
        "correction-long-text",
        with_(corrections=[{"at": AT, "text": "x" * (NOTE_MAX + 1)}]),
        "corrections.0.text",
        "at most 1000",
    ),
    (
        "correction-number-text",
        with_(corrections=[{"at": AT, "text": 5}]),
        "corrections.0.text",
        "string",
    ),
    (
        "correction-before-publishing",
        with_(corrections=[{"at": "2025-12-31T23:59:59Z", "text": "x"}]),
        "corrections",
        "earlier than published_at",
    ),
    ("retracted-true", with_(retracted=True), "retracted", "valid dictionary"),
    ("retracted-no-reason", with_(retracted={"at": AT}), "retracted.reason", "required"),
    ("retracted-no-at", with_(retracted={"reason": "x"}), "retracted.at", "required"),
    (
        "retracted-empty-reason",
        with_(retracted={"at": AT, "reason": ""}),
        "retracted.reason",
        "at least 1",
    ),
    (
        "retracted-long-reason",
        with_(retracted={"at": AT, "reason": "x" * (NOTE_MAX + 1)}),
        "retracted.reason",
        "at most 1000",
    ),
    (
        "retracted-no-offset",
        with_(retracted={"at": "2026-01-02T00:00:00", "reason": "x"}),
        "retracted.at",
        "offset",
    ),
    (
        "retracted-before-publishing",
        with_(retracted={"at": "2025-12-01T00:00:00+09:00", "reason": "x"}),
        "retracted",
        "earlier than published_at",
    ),
    # A retraction is an article line: its id follows the rules of every id.
    (
        "retracted-reserved-id",
        good("latest", retracted={"at": AT, "reason": "x"}),
        "id",
        "reserved",
    ),
    (
        "retraction-of-a-line-given-twice",
        good("fine-1", retracted={"at": AT, "reason": "x"}),
        "id",
        "duplicate id 'fine-1'",
    ),
]


@pytest.fixture(scope="module")
def previous_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good bundle holding an article, a corrected one and a retraction."""
    root = tmp_path_factory.mktemp("previous")
    src = root / "src"
    write_jsonl(
        src / "a.jsonl",
        [
            good("previous-1"),
            good("previous-2", corrections=[{"at": AT, "text": "Fixed."}]),
            good("previous-3", retracted={"at": AT, "reason": "Wrong."}),
        ],
    )
    out = root / "out"
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("full", [True, False], ids=["full", "incremental"])
@pytest.mark.parametrize(
    ("line", "field", "phrase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rejected_naming_file_line_and_field(
    tmp_path: Path,
    previous_bundle: Path,
    capsys: pytest.CaptureFixture[str],
    line: dict[str, Any],
    field: str,
    phrase: str,
    full: bool,
) -> None:
    out = tmp_path / "out"
    shutil.copytree(previous_bundle, out)
    src = tmp_path / "src"
    path = write_jsonl(src / "news.jsonl", [good("fine-1"), "", line, good("fine-2")])
    before = tree_digest(out)
    capsys.readouterr()
    rc = cli.main(["--src", str(src), "--out", str(out), *(["--full"] if full else [])])
    stderr = capsys.readouterr().err
    assert rc == 1
    problems = [x.strip() for x in stderr.splitlines() if x.startswith("  ")]
    assert len(problems) == 1, stderr
    assert problems[0].startswith(f"{path}:3: field '{field}': "), stderr
    assert phrase in problems[0], stderr
    assert "unchanged" in stderr
    assert tree_digest(out) == before and leftovers(out) == []


def test_the_bounds_themselves_are_accepted(tmp_path: Path) -> None:
    """The largest accepted values (the other side of each rejected bound)."""
    src, out = tmp_path / "src", tmp_path / "out"
    write_jsonl(
        src / "a.jsonl",
        [
            good(
                "edge",
                provenance={"sources": URLS[:SOURCES_MAX], "source_type": None},
                corrections=[{"at": "2026-01-01T00:00:00Z", "text": "x" * NOTE_MAX}],
            ),
            good("gone", retracted={"at": "2026-01-01T09:00:00+09:00", "reason": "r" * NOTE_MAX}),
        ],
    )
    assert cli.main(["--src", str(src), "--out", str(out)]) == 0


def test_a_retraction_beside_a_kept_article_of_its_id(
    tmp_path: Path, previous_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A retraction line is the article: beside the article's own (kept) line, the id is
    there twice, and the message names both lines."""
    out = tmp_path / "out"
    shutil.copytree(previous_bundle, out)
    src = tmp_path / "src"
    first = write_jsonl(
        src / "a.jsonl",
        [
            good("previous-1"),
            good("previous-2", corrections=[{"at": AT, "text": "Fixed."}]),
            good("previous-3", retracted={"at": AT, "reason": "Wrong."}),
        ],
    )
    second = write_jsonl(src / "b.jsonl", [good("previous-1", retracted={"at": AT, "reason": "x"})])
    before = tree_digest(out)
    capsys.readouterr()
    assert cli.main(["--src", str(src), "--out", str(out)]) == 1
    stderr = capsys.readouterr().err
    assert (
        f"{second}:1: field 'id': duplicate id 'previous-1' in language 'en' (first at {first}:1)"
    ) in stderr
    assert tree_digest(out) == before
    # The same line beside a kept retraction of that id: also twice.
    write_jsonl(src / "b.jsonl", [good("previous-3", title="Back")])
    capsys.readouterr()
    assert cli.main(["--src", str(src), "--out", str(out)]) == 1
    assert f"{first}:3" in capsys.readouterr().err
    assert tree_digest(out) == before
