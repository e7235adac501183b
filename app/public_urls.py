"""Public URLs of articles, feeds and sitemaps (docs/delivery.md, "Public URLs").

The builder bakes them into feeds and sitemaps, so it reads NEWS_PUBLIC_BASE_URL,
NEWS_ARTICLE_URL_TEMPLATE and NEWS_PUBLICATION_NAME where bundles are built, and records them
in the manifest; a build whose settings differ from the bundle it updates rebuilds from
scratch.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from urllib.parse import quote

from app.config import ConfigError

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_ARTICLE_URL_TEMPLATE = "{base}/api/v1/{language}/articles/{id}"
DEFAULT_PUBLICATION_NAME = "News"
_TEMPLATE_FIELDS = frozenset({"base", "language", "id"})

# BCP 47 tags for feeds and sitemaps (docs/api.md §8); the path codes are the other seven.
_BCP47 = {"zh_cn": "zh-CN", "zh_tw": "zh-TW"}


def bcp47(language: str) -> str:
    return _BCP47.get(language, language)


@dataclass(frozen=True)
class PublicUrls:
    base: str = DEFAULT_BASE_URL
    article_template: str = DEFAULT_ARTICLE_URL_TEMPLATE
    publication: str = DEFAULT_PUBLICATION_NAME

    def __post_init__(self) -> None:
        if not self.base.startswith(("http://", "https://")):
            raise ConfigError(f"NEWS_PUBLIC_BASE_URL must be an http(s) URL, got {self.base!r}")
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(self.article_template) if f}
        except ValueError as exc:
            raise ConfigError(f"NEWS_ARTICLE_URL_TEMPLATE is malformed: {exc}") from None
        if "id" not in names or not names <= _TEMPLATE_FIELDS:
            raise ConfigError(
                "NEWS_ARTICLE_URL_TEMPLATE must contain {id} and no fields other than "
                f"{{base}}, {{language}}, {{id}}; got {self.article_template!r}"
            )
        if not self.publication.strip():
            raise ConfigError("NEWS_PUBLICATION_NAME must not be blank")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PublicUrls:
        env = os.environ if env is None else env
        return cls(
            base=(env.get("NEWS_PUBLIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/"),
            article_template=env.get("NEWS_ARTICLE_URL_TEMPLATE") or DEFAULT_ARTICLE_URL_TEMPLATE,
            publication=env.get("NEWS_PUBLICATION_NAME") or DEFAULT_PUBLICATION_NAME,
        )

    @classmethod
    def from_manifest(cls, record: Mapping[str, str]) -> PublicUrls:
        return cls(record["base"], record["article_template"], record["publication"])

    def manifest(self) -> dict[str, str]:
        return asdict(self)

    def article(self, language: str, article_id: str) -> str:
        return self.article_template.format(
            base=self.base, language=language, id=quote(article_id, safe="")
        )

    def site(self, path: str) -> str:
        """An absolute URL of this service's own path (feeds, sitemaps)."""
        return f"{self.base}{path}"
