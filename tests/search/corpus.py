"""Loading a source .jsonl file in bundle order, for the relevance suite and the benchmark."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson

from app.search.indexer import IndexDoc


@dataclass(frozen=True)
class Article:
    id: str
    title: str
    summary: str
    content: str
    tags: tuple[str, ...]
    published_at: datetime

    def index_doc(self) -> IndexDoc:
        return IndexDoc(self.title, self.summary, self.content, self.tags)


def load_jsonl(path: Path) -> list[Article]:
    """Articles of one file ordered like the bundle: published_at desc (UTC), then id asc."""
    articles = []
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        raw = orjson.loads(line)
        published = datetime.fromisoformat(raw["published_at"].replace("Z", "+00:00"))
        articles.append(
            Article(
                id=raw["id"],
                title=raw["title"],
                summary=raw["summary"],
                content=raw["content"],
                tags=tuple(raw.get("tags") or ()),
                published_at=published.astimezone(UTC),
            )
        )
    articles.sort(key=lambda a: a.id)
    articles.sort(key=lambda a: a.published_at, reverse=True)  # stable: id asc within ties
    return articles
