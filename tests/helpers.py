"""Shared test helpers: a second corpus (not the sample), an oracle model of it, and utilities.

The corpus is generated here, in code, so every expectation in the HTTP tests is computed
from the same records by an independent model (`expected_*`), never copied from a response.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from app.languages import LANGUAGES

ARTICLE_FIELDS = frozenset(
    {
        "id",
        "language",
        "title",
        "summary",
        "content",
        "category",
        "tags",
        "author",
        "image_url",
        "published_at",
        "updated_at",
        "translations",
        "provenance",
        "corrections",
    }
)
SUMMARY_FIELDS = frozenset(
    {"id", "language", "title", "summary", "category", "image_url", "published_at", "ai_generated"}
)
LIST_FIELDS = frozenset({"items", "total", "page", "page_size", "total_pages"})
SEARCH_FIELDS = LIST_FIELDS | {"facets"}

# Languages that get articles in the corpus; the rest of the nine get none.
POPULATED = ("ko", "en", "ja", "zh_tw", "fr")
EMPTY_LANGUAGES = tuple(lang for lang in LANGUAGES if lang not in POPULATED)

NFC_CAFE = "caf\u00e9"
NFD_CAFE = "cafe\u0301"

# Ids that stress routing and URL decoding; all are articles of `en` unless noted.
AWKWARD_EN_IDS = (
    "hello world",
    "latest-news",
    "search-results",
    "12345",
    "comments",
    "100%",
    "a+b",
    "what?&#frag",
    NFC_CAFE,
    NFD_CAFE,
    "Hello",
    "hello",
    "shared-id",
)
KO_ID = "경제-뉴스"
JA_ID = "日本語"


def _article(
    language: str,
    article_id: str,
    published_at: str,
    category: str,
    *,
    title: str | None = None,
    summary: str | None = None,
    content: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": article_id,
        "language": language,
        "title": title or f"Title of {article_id}",
        "summary": summary or f"Summary of {article_id}. A second sentence.",
        "content": content or f"First paragraph of {article_id}.\n\nSecond paragraph.",
        "category": category,
        "published_at": published_at,
    }
    record.update(extra)
    return record


def corpus_records() -> list[dict[str, Any]]:
    """The second corpus: awkward ids, categories, offsets, ties; several languages empty."""
    records: list[dict[str, Any]] = []
    en_categories = ("politics", "economy", "world", "Politics", "Économie")
    # 40 ordinary English articles spread over time (pagination needs more than 20).
    for n in range(40):
        day, hour = 1 + n % 28, n % 24
        offset = ("Z", "+09:00", "-05:00", "+05:30")[n % 4]
        records.append(
            _article(
                "en",
                f"en-{n:03d}",
                f"2025-{1 + n // 28:02d}-{day:02d}T{hour:02d}:{n % 60:02d}:00{offset}",
                en_categories[n % len(en_categories)],
                tags=[f"tag{n % 3}", "filler"],
                author=None if n % 2 else f"Author {n}",
                image_url=None if n % 3 else f"https://img.example/{n}.jpg",
            )
        )
    # Awkward ids, all at distinct times in 2026.
    for n, article_id in enumerate(AWKWARD_EN_IDS):
        records.append(
            _article(
                "en",
                article_id,
                f"2026-02-{1 + n:02d}T12:00:00Z",
                "politics" if n % 2 else "world",
                tags=[],
                author="Jane Doe",
                updated_at=f"2026-02-{1 + n:02d}T15:30:00+02:00",
            )
        )
    # One instant written three ways: ordering then falls to id ascending.
    records.append(
        _article("en", "tie-c", "2026-03-01T09:00:00+09:00", "economy", story_id="chips")
    )
    records.append(_article("en", "tie-a", "2026-02-28T19:00:00-05:00", "economy"))
    records.append(_article("en", "tie-b", "2026-03-01T00:00:00Z", "economy"))
    # An offset that moves the date back across a year boundary, with a later update.
    records.append(
        _article(
            "en",
            "new-year",
            "2026-01-01T02:00:00+09:00",
            "world",
            updated_at="2026-01-01T10:15:00+09:00",
            author=None,
            image_url=None,
        )
    )

    records += [
        _article(
            "ko",
            KO_ID,
            "2026-04-01T09:00:00+09:00",
            "경제",
            title="한국 경제 성장률 발표",
            summary="한국은행이 올해 경제 성장률 전망을 발표했다.",
            content="한국은행은 경제가 회복세를 보인다고 밝혔다.\n\n전문가들은 신중한 입장이다.",
            tags=["경제", "한국은행"],
            author="김기자",
            story_id="economy-2026-04",
        ),
        _article(
            "ko",
            "정치-1",
            "2026-04-02T09:00:00+09:00",
            "정치",
            title="국회 예산안 통과",
            summary="국회가 내년도 예산안을 통과시켰다.",
            content="여야는 합의에 도달했다.",
        ),
        _article(
            "ko", "it-1", "2026-03-30T18:00:00Z", "IT", title="반도체 수출 증가", story_id="chips"
        ),
        _article("ko", "shared-id", "2026-03-29T00:00:00Z", "경제", title="공유 아이디 기사"),
        _article(
            "ja",
            JA_ID,
            "2026-04-03T08:00:00+09:00",
            "経済",
            title="日本経済は回復へ",
            summary="日本経済は緩やかに回復している。",
            content="政府は景気判断を据え置いた。",
            story_id="economy-2026-04",
        ),
        _article("ja", "ＡＢＣ", "2026-04-02T08:00:00+09:00", "社会", title="全角の識別子"),
        _article("ja", "ABC", "2026-04-01T08:00:00+09:00", "社会", title="半角の識別子"),
        _article(
            "zh_tw",
            "台灣-1",
            "2026-04-04T10:00:00+08:00",
            "經濟",
            title="臺灣經濟成長",
            summary="主計總處公布最新經濟數據。",
            content="出口表現強勁。",
            story_id="economy-2026-04",
        ),
        _article("zh_tw", "tw-2", "2026-04-03T10:00:00+08:00", "政治", title="立法院會議"),
        _article(
            "fr",
            "shared-id",
            "2026-04-05T10:00:00+02:00",
            "économie",
            title="L'économie française progresse",
            summary="La croissance dépasse les prévisions.",
            content="Les économistes sont surpris.",
            story_id="economy-2026-04",
        ),
        _article("fr", "élections", "2026-04-06T10:00:00+02:00", "politique", title="Élections"),
    ]
    return records


def good(article_id: str = "good-1", language: str = "en", **changes: Any) -> dict[str, Any]:
    """A valid source record, with `changes` applied (for builder tests)."""
    record: dict[str, Any] = {
        "id": article_id,
        "language": language,
        "title": "A title",
        "summary": "A summary.",
        "content": "Body text.",
        "category": "politics",
        "published_at": "2026-01-01T00:00:00Z",
    }
    record.update(changes)
    return record


def write_jsonl(path: Path, lines: Iterable[Mapping[str, Any] | str | bytes]) -> Path:
    """Write one line per item: dicts as JSON, strings/bytes verbatim (for bad input)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    for item in lines:
        if isinstance(item, bytes):
            out += item
        elif isinstance(item, str):
            out += item.encode("utf-8")
        else:
            out += json.dumps(item, ensure_ascii=False).encode("utf-8")
        out += b"\n"
    path.write_bytes(bytes(out))
    return path


def write_corpus(src: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Spread records over several files (one per language, one nested), with blank lines."""
    by_language: dict[str, list[Mapping[str, Any] | str]] = {}
    for record in records:
        by_language.setdefault(str(record["language"]), []).append(record)
    for language, items in by_language.items():
        if language == "ja":
            write_jsonl(src / "nested" / "asia" / f"{language}.jsonl", items)
        else:
            # Blank and whitespace-only lines between records are ignored by the builder.
            spaced: list[Mapping[str, Any] | str] = ["", "   "]
            for item in items:
                spaced += [item, ""]
            write_jsonl(src / f"{language}.jsonl", spaced)
    (src / "README.txt").write_text("not a source file {", encoding="utf-8")


# -- the oracle -----------------------------------------------------------------------------


def utc(ts: str) -> str:
    """RFC 3339 with offset -> UTC `...Z` (docs/api.md §6, computed independently)."""
    return datetime.fromisoformat(ts).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


AI_SOURCE_TYPES = {"trainedAlgorithmicMedia", "compositeWithTrainedAlgorithmicMedia"}


def expected_provenance(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """docs/api.md §11, written out: the defaults, the URI, `ai_generated`, `reviewed`."""
    source = source or {}
    kind = source.get("source_type") or "trainedAlgorithmicMedia"
    reviewed = None
    if source.get("reviewed_by") is not None:
        reviewed = {"by": source["reviewed_by"], "at": utc(source["reviewed_at"])}
    return {
        "source_type": kind,
        "source_type_uri": "http://cv.iptc.org/newscodes/digitalsourcetype/" + kind,
        "ai_generated": kind in AI_SOURCE_TYPES,
        "generator": source.get("generator"),
        "reviewed": reviewed,
        "sources": list(source.get("sources") or []),
    }


def expected_corrections(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """Oldest first (a stable sort: equal times keep their source order)."""
    notes = record.get("corrections") or []
    ordered = sorted(notes, key=lambda c: datetime.fromisoformat(c["at"]).timestamp())
    return [{"at": utc(c["at"]), "text": c["text"]} for c in ordered]


def served(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records that are articles: a retracted one is served nowhere (§11)."""
    return [r for r in records if not r.get("retracted")]


def expected_translations(
    record: Mapping[str, Any], records: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """The story's other languages (docs/api.md §8), computed independently of the builder."""
    story = record.get("story_id")
    if story is None:
        return {}
    found = {
        r["language"]: r["id"]
        for r in served(records)
        if r.get("story_id") == story and r["language"] != record["language"]
    }
    return {lang: found[lang] for lang in LANGUAGES if lang in found}


def expected_article(
    record: Mapping[str, Any], records: Iterable[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The Article of `record`; `records` (the whole source) decides its translations."""
    published = utc(record["published_at"])
    corrections = expected_corrections(record)
    updated = max(
        [record["published_at"], record.get("updated_at") or record["published_at"]]
        + [c["at"] for c in record.get("corrections") or []],
        key=lambda t: datetime.fromisoformat(t).timestamp(),
    )
    return {
        "id": record["id"],
        "language": record["language"],
        "title": record["title"],
        "summary": record["summary"],
        "content": record["content"],
        "category": record["category"],
        "tags": list(record.get("tags") or []),
        "author": record.get("author"),
        "image_url": record.get("image_url"),
        "published_at": published,
        "updated_at": utc(updated),
        "translations": expected_translations(record, records),
        "provenance": expected_provenance(record.get("provenance")),
        "corrections": corrections,
    }


def summary_of(article: Mapping[str, Any]) -> dict[str, Any]:
    """The ArticleSummary of an Article."""
    fields = {**article, "ai_generated": article["provenance"]["ai_generated"]}
    return {key: fields[key] for key in SUMMARY_FIELDS}


def expected_summary(record: Mapping[str, Any]) -> dict[str, Any]:
    return summary_of(expected_article(record))


def expected_order(
    records: Iterable[Mapping[str, Any]], language: str, category: str | None = None
) -> list[dict[str, Any]]:
    """published_at descending, then id ascending (code point order)."""
    records = list(records)
    chosen = [
        r
        for r in served(records)
        if r["language"] == language and (category is None or r["category"] == category)
    ]
    by_id = sorted(chosen, key=lambda r: r["id"])
    ordered = sorted(
        by_id, key=lambda r: datetime.fromisoformat(r["published_at"]).timestamp(), reverse=True
    )
    return [expected_article(r, records) for r in ordered]


def expected_summaries(records: Iterable[Mapping[str, Any]], language: str) -> list[dict[str, Any]]:
    """The `latest` order: list order, as ArticleSummary."""
    return [summary_of(a) for a in expected_order(records, language)]


def expected_categories(records: Iterable[Mapping[str, Any]], language: str) -> list[str]:
    return sorted({r["category"] for r in served(records) if r["language"] == language})


def total_pages(total: int, page_size: int) -> int:
    return math.ceil(total / page_size)


def article_path(language: str, article_id: str) -> str:
    return f"/api/v1/{language}/articles/{quote(article_id, safe='')}"


# -- file-system helpers --------------------------------------------------------------------


def tree_digest(root: Path) -> dict[str, str]:
    """Relative path -> sha256 (or a marker for directories/symlinks), for before/after checks."""
    if not root.exists() and not root.is_symlink():
        return {}
    if root.is_symlink() or root.is_file():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest() if root.is_file() else "link"}
    result: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames:
            result[str((base / name).relative_to(root)) + "/"] = "dir"
        for name in filenames:
            path = base / name
            result[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def leftovers(out: Path) -> list[str]:
    """Temporary files or directories a build left beside or inside `out`."""
    found = [p.name for p in out.parent.glob(f".{out.name}.new-*")]
    if out.is_dir() and not out.is_symlink():
        found += [p.name for p in out.glob(".tmp-*")]
        found += [p.name for p in out.glob("objects/.tmp-*")]
    return sorted(found)


def bundle_object(bundle: Path, language: str, name: str) -> Path:
    """The object file behind one of a language's files: its first segment's, else the
    generation's (layout: app/bundle/format.py)."""
    meta = json.loads((bundle / "manifest.json").read_bytes())["languages"][language]
    files = meta["segments"][0]["files"] if meta["segments"] else {}
    return bundle / "objects" / (files.get(name) or meta["files"][name])


def bundle_files(root: Path) -> dict[str, bytes]:
    """The bundle proper: manifest.json and its objects (what install_bundle.py ships), not the
    builder's local bookkeeping (build state, verified record, previous manifest)."""
    files = {"manifest.json": (root / "manifest.json").read_bytes()}
    for path in sorted((root / "objects").iterdir()):
        files[f"objects/{path.name}"] = path.read_bytes()
    return files
