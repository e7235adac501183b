"""Surrogate keys: what a cached response depends on, for a CDN to purge precisely
(docs/delivery.md, "CDN").

Grammar (ASCII, lower case, no spaces or commas, at most 45 characters: safe for Fastly's
`Surrogate-Key` and Cloudflare's `Cache-Tag`, which is case-insensitive):

    lang-<language>        every response of the language (purge-all for one language)
    list-<language>        collections of the language: unfiltered lists, latest, search,
                           categories, the feeds of all categories, sitemap pages; any
                           publish that touches the language changes them
    cat-<16 hex>           category pages and feeds of one category (language and name,
                           hashed)
    art-<16 hex>           one article (language and id, hashed: ids may hold any character)
    site                   documents that span languages: the sitemap index, the news sitemap
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable

SITE_KEY = "site"


def _plain(kind: str, language: str) -> str:
    return f"{kind}-{language.lower()}"


def _hashed(kind: str, language: str, name: str) -> str:
    raw = f"{language}\0{name}".encode("utf-8", "surrogatepass")
    return f"{kind}-{hashlib.blake2b(raw, digest_size=8).hexdigest()}"


# One key of each kind of the grammar above: (language) or (language, name) -> key.
language_key = functools.partial(_plain, "lang")
collection_key = functools.partial(_plain, "list")
category_key = functools.partial(_hashed, "cat")
article_key = functools.partial(_hashed, "art")


@functools.lru_cache(maxsize=64)  # one per language (checked before any resource runs)
def collection(language: str) -> str:
    """The keys of an unfiltered list, latest, search or categories response."""
    return f"{language_key(language)} {collection_key(language)}"


def category_page(language: str, category: str) -> str:
    return f"{language_key(language)} {category_key(language, category)}"


def article(language: str, article_id: str) -> str:
    return f"{language_key(language)} {article_key(language, article_id)}"


def article_key_width(language: str) -> int:
    """Characters of `article(language, id)`, the same for every id."""
    return len(language_key(language)) + len(" art-") + 16


def article_keys(language: str, ids: Iterable[bytes]) -> str:
    """`article(language, id)` of every id (UTF-8) at once, concatenated: fields of
    `article_key_width(language)` characters (app.bundle.heads writes them at build)."""
    prefix = f"{language_key(language)} art-"
    head = f"{language}\0".encode()
    blake2b = hashlib.blake2b
    return "".join([prefix + blake2b(head + name, digest_size=8).hexdigest() for name in ids])


def category_feed(language: str, category: str, known: bool) -> str:
    """A feed of one category. The feed of a category with no article is rendered with the
    language's newest time, so it depends on the language's collections too."""
    keys = category_page(language, category)
    return keys if known else f"{keys} {collection_key(language)}"
