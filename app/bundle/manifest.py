"""The manifest of a bundle (`manifest.json`), typed: the one parser, validator and
serialiser every reader and writer of a manifest uses (layout: app/bundle/format.py).

    {"format": "news-bundle", "format_version": 7, "bundle_id": "…",
     "languages": {code: Language, …}, "site": Site,
     "objects": {sha256: {"size": bytes, "crc32": CRC-32}, …}}

A `Language` names its generation files and feeds and lists its `Segment`s; each segment and
the generation and the site name an object for every component format.py declares for them,
no more and no fewer, and `objects` holds an entry for every object they name. The
bundle id is derived from what is served (`bundle_id_for`), so a manifest whose id does not
match its languages is refused. `parse` checks all of that with one policy, and its error
names the field; `serialise` writes the same bytes for the same manifest (a build is
deterministic, and `parse(serialise(m)) == m`).
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from app import versions
from app.bundle import format as fmt
from app.bundle.objects import ObjectEntry
from app.bundle.versions import mismatch
from app.languages import LANGUAGES

# Who reads an object: a language code, or SITE for the sitemap index and news sitemap.
SITE = "site"


class ManifestError(ValueError):
    """The manifest cannot be used; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment descriptor: how many documents it holds, and its object per component."""

    docs: int
    files: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"docs": self.docs, "files": dict(self.files)}


@dataclass(frozen=True, slots=True)
class Language:
    """One language's entry: its served articles, segments and generation."""

    articles: int  # served articles (the generation's order)
    retracted: int  # articles with a retraction notice
    content_hash: str  # of what is served: collection ETags and the bundle id derive from it
    codec: str  # app.compression.CODEC_ID of the builder that compressed the pieces
    categories: tuple[tuple[str, int, int], ...]  # (name, first position, count) in category.pos
    segments: tuple[Segment, ...]
    deleted: tuple[int, ...]  # per segment, its documents no longer served
    files: Mapping[str, str]  # generation component -> object
    feeds: Mapping[str, str]  # category ("" for all) -> object of its feed documents

    def objects(self) -> frozenset[str]:
        return frozenset().union(
            self.files.values(), self.feeds.values(), *(s.files.values() for s in self.segments)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "articles": self.articles,
            "retracted": self.retracted,
            "content_hash": self.content_hash,
            "codec": self.codec,
            "categories": [list(c) for c in self.categories],
            "segments": [s.to_json() for s in self.segments],
            "deleted": list(self.deleted),
            "files": dict(self.files),
            "feeds": dict(self.feeds),
        }


@dataclass(frozen=True, slots=True)
class Site:
    """What spans languages: the sitemap index and news sitemap in every coding (`files`),
    the codec that compressed them, the sitemap page size and public URLs of the build, and
    each news sitemap entry's published_at (µs) and the end of its line, newest first."""

    files: Mapping[str, str]  # site component -> object
    codec: str
    sitemap_page_urls: int
    public_urls: Mapping[str, str]
    news_published: tuple[int, ...]
    news_ends: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "files": dict(self.files),
            "codec": self.codec,
            "sitemap_page_urls": self.sitemap_page_urls,
            "public_urls": dict(self.public_urls),
            "news": {"published": list(self.news_published), "ends": list(self.news_ends)},
        }


@dataclass(frozen=True, slots=True)
class Manifest:
    bundle_id: str
    languages: Mapping[str, Language]
    site: Site
    objects: Mapping[str, ObjectEntry]  # every object the languages and the site name

    @classmethod
    def assemble(
        cls, languages: Mapping[str, Language], site: Site, entries: Mapping[str, ObjectEntry]
    ) -> Manifest:
        """The manifest of a new generation: its id derived, and the entries of the objects
        it names taken from `entries` (which may hold more)."""
        names = set(site.files.values()).union(*(m.objects() for m in languages.values()))
        return cls(
            bundle_id_for(languages),
            dict(languages),
            site,
            {name: entries[name] for name in sorted(names)},
        )

    def owners(self) -> dict[str, frozenset[str]]:
        """Each language's objects, and the site's (SITE)."""
        owners = {code: meta.objects() for code, meta in self.languages.items()}
        owners[SITE] = frozenset(self.site.files.values())
        return owners

    def to_json(self) -> dict[str, Any]:
        return {
            "format": versions.BUNDLE_FORMAT_NAME,
            "format_version": versions.BUNDLE_FORMAT_VERSION,
            "bundle_id": self.bundle_id,
            "languages": {code: meta.to_json() for code, meta in self.languages.items()},
            "site": self.site.to_json(),
            "objects": {
                name: {"size": e.size, "crc32": e.crc32} for name, e in self.objects.items()
            },
        }


def serialise(manifest: Manifest) -> bytes:
    return (
        orjson.dumps(manifest.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    )


def bundle_id_for(languages: Mapping[str, Language]) -> str:
    """Derived from what is served (each language's content hash), not from file layout: a
    merge or an incremental build serving the same articles keeps the id."""
    h = hashlib.sha256(
        f"{versions.BUNDLE_FORMAT_NAME}\0{versions.BUNDLE_FORMAT_VERSION}\n".encode()
    )
    for code in sorted(languages):
        meta = languages[code]
        h.update(f"{code}\0{meta.content_hash}\0{meta.codec}\n".encode())
    return h.hexdigest()[:20]


def parse(data: bytes, where: str) -> Manifest:
    """The manifest in `data` (read from `where`, which every error message starts with)."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ManifestError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("format") != versions.BUNDLE_FORMAT_NAME:
        raise ManifestError(f"{where}: not a {versions.BUNDLE_FORMAT_NAME} manifest")
    problem = mismatch({"format_version": raw.get("format_version")})
    if problem:
        raise ManifestError(f"{where}: {problem}; rebuild the bundle with this release's builder")
    try:
        return _manifest(raw)
    except ManifestError as exc:
        raise ManifestError(f"{where}: {exc}") from None


def read(path: Path) -> Manifest:
    """The manifest in the file `path`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read manifest ({exc.strerror})") from None
    return parse(data, str(path))


def language_entry(code: str, raw: Mapping[str, Any]) -> Language:
    """A language's entry in its JSON form (`Language.to_json`), checked as a reader checks
    it."""
    return _language(_fields(raw, _LANGUAGE_FIELDS, f"language {code}: "), f"language {code}: ")


def site_entry(raw: Mapping[str, Any]) -> Site:
    """The site entry in its JSON form (`Site.to_json`), checked as a reader checks it."""
    return _site(_fields(raw, _SITE_FIELDS, "site: "), "site: ")


def segment_entry(raw: Mapping[str, Any], context: str = "") -> Segment:
    """A segment descriptor in its JSON form (`Segment.to_json`), checked as a reader checks
    it."""
    fields = _fields(raw, ("docs", "files"), context)
    return Segment(
        _count(fields["docs"], context, "docs"),
        _components(fields["files"], fmt.SEGMENT_FILES, context),
    )


def segment_table(raw: Any, context: str = "") -> dict[str, Segment]:
    """Segment descriptors by key in their JSON form, as a file outside the bundle holds
    them (a shard's segments by unit: app.builder.shards), each checked as a reader checks
    it; the error names the key."""
    return {
        key: segment_entry(_mapping(desc, context, key), f"{context}segment {key}: ")
        for key, desc in _mapping(raw, context, "segments").items()
    }


# -- validation: each check names the field it refuses -------------------------------------

_TOP_FIELDS = ("format", "format_version", "bundle_id", "languages", "site", "objects")
_LANGUAGE_FIELDS = (
    "articles",
    "retracted",
    "content_hash",
    "codec",
    "categories",
    "segments",
    "deleted",
    "files",
    "feeds",
)
_SITE_FIELDS = ("files", "codec", "sitemap_page_urls", "public_urls", "news")


def _manifest(raw: dict[str, Any]) -> Manifest:
    fields = _fields(raw, _TOP_FIELDS, "")
    bundle_id = _string(fields["bundle_id"], "", "bundle_id")
    languages = _mapping(fields["languages"], "", "languages")
    if set(languages) != set(LANGUAGES):
        missing = [code for code in LANGUAGES if code not in languages]
        unknown = sorted(set(languages) - set(LANGUAGES))
        raise ManifestError(
            f"manifest has no language {missing[0]!r}"
            if missing
            else f"field 'languages': unknown language {unknown[0]!r}"
        )
    parsed = {
        code: language_entry(code, _mapping(languages[code], "", f"languages.{code}"))
        for code in LANGUAGES
    }
    site = site_entry(_mapping(fields["site"], "", "site"))
    objects = _objects(fields["objects"])
    named = set(site.files.values()).union(*(meta.objects() for meta in parsed.values()))
    unlisted = named.difference(objects)
    if unlisted:
        name = min(unlisted)
        if not _all_names([name]):
            raise ManifestError(f"{_naming(parsed, site, name)} is not an object name: {name!r}")
        raise ManifestError(f"object {name} has no entry in field 'objects'")
    if bundle_id_for(parsed) != bundle_id:
        raise ManifestError("field 'bundle_id' does not match the languages' content")
    return Manifest(bundle_id, parsed, site, objects)


def _naming(languages: Mapping[str, Language], site: Site, name: str) -> str:
    """Which field names the object `name` (for an error message)."""
    for code, meta in languages.items():
        for field, files in (("files", meta.files), ("feeds", meta.feeds)):
            for key, obj in files.items():
                if obj == name:
                    return f"language {code}: field '{field}.{key}'"
        for n, segment in enumerate(meta.segments):
            for key, obj in segment.files.items():
                if obj == name:
                    return f"language {code}: segment {n}: field 'files.{key}'"
    return next(f"site: field 'files.{k}'" for k, obj in site.files.items() if obj == name)


def _language(fields: Mapping[str, Any], context: str) -> Language:
    segments_raw = _list(fields["segments"], context, "segments")
    segments = tuple(
        segment_entry(_mapping(s, context, f"segments[{n}]"), f"{context}segment {n}: ")
        for n, s in enumerate(segments_raw)
    )
    deleted = tuple(
        _count(d, context, f"deleted[{n}]")
        for n, d in enumerate(_list(fields["deleted"], context, "deleted"))
    )
    if len(deleted) != len(segments):
        raise ManifestError(f"{context}field 'deleted' does not have one count per segment")
    categories = []
    for n, c in enumerate(_list(fields["categories"], context, "categories")):
        if not (
            isinstance(c, list)
            and len(c) == 3
            and isinstance(c[0], str)
            and all(type(x) is int and x >= 0 for x in c[1:])
        ):
            raise ManifestError(f"{context}field 'categories[{n}]' is not [name, start, count]")
        categories.append((c[0], c[1], c[2]))
    feeds = _names(fields["feeds"], context, "feeds")
    return Language(
        _count(fields["articles"], context, "articles"),
        _count(fields["retracted"], context, "retracted"),
        _string(fields["content_hash"], context, "content_hash"),
        _string(fields["codec"], context, "codec"),
        tuple(categories),
        segments,
        deleted,
        _components(fields["files"], fmt.GENERATION_FILES, context),
        feeds,
    )


def _site(fields: Mapping[str, Any], context: str) -> Site:
    news = _fields(_mapping(fields["news"], context, "news"), ("published", "ends"), context)
    published = tuple(
        _integer(p, context, f"news.published[{n}]")
        for n, p in enumerate(_list(news["published"], context, "news.published"))
    )
    ends = tuple(
        _count(e, context, f"news.ends[{n}]")
        for n, e in enumerate(_list(news["ends"], context, "news.ends"))
    )
    urls = _mapping(fields["public_urls"], context, "public_urls")
    for key, value in urls.items():
        _string(value, context, f"public_urls.{key}")
    page = _count(fields["sitemap_page_urls"], context, "sitemap_page_urls")
    if page < 1:
        raise ManifestError(f"{context}field 'sitemap_page_urls' must be at least 1")
    return Site(
        _components(fields["files"], fmt.SITE_FILES, context),
        _string(fields["codec"], context, "codec"),
        page,
        urls,
        published,
        ends,
    )


def _objects(value: Any) -> Mapping[str, ObjectEntry]:
    """The `objects` field. A bundle names thousands of objects and the server parses its
    manifest at every load: the common case (all valid) is checked in bulk, and only a
    manifest that fails it is walked entry by entry to name what is wrong."""
    objects = _mapping(value, "", "objects")
    entries = list(objects.values())
    if (
        set(map(type, entries)) <= {dict}
        and set(map(len, entries)) <= {2}
        and _all_names([*objects])
    ):
        try:
            sizes = list(map(_SIZE, entries))
            crcs = list(map(_CRC, entries))
        except KeyError:
            pass
        else:
            if set(map(type, sizes)) | set(map(type, crcs)) <= {int} and min(sizes, default=0) >= 0:
                return _ObjectTable(objects)
    for name, entry in objects.items():
        if not _all_names([name]):
            raise ManifestError(f"field 'objects': {name!r} is not an object name")
        if not (
            type(entry) is dict
            and len(entry) == 2
            and type(entry.get("size")) is int
            and entry["size"] >= 0
            and type(entry.get("crc32")) is int
        ):
            raise ManifestError(
                f"object {name} has no entry of {{size, crc32}} in field 'objects' "
                f"(found {entry!r})"
            )
    raise AssertionError("unreachable: the bulk check passes when every entry does")


class _ObjectTable(Mapping[str, ObjectEntry]):
    """The parsed `objects` field: checked as a whole, each ObjectEntry made when asked for
    (a load reads the entries of the objects it maps anew, often few of thousands)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[str, dict[str, int]]) -> None:
        self._raw = raw

    def __getitem__(self, name: str) -> ObjectEntry:
        entry = self._raw[name]
        return ObjectEntry(entry["size"], entry["crc32"])

    def __contains__(self, name: object) -> bool:
        return name in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


_SIZE = operator.itemgetter("size")
_CRC = operator.itemgetter("crc32")
_HEX_DIGITS = b"0123456789abcdef"


def _all_names(names: list[str]) -> bool:
    """Whether each of `names` is an object name: a SHA-256 in lowercase hex."""
    if not set(map(len, names)) <= {64}:
        return False
    joined = "".join(names)
    return joined.isascii() and not joined.encode().translate(None, _HEX_DIGITS)


def _components(value: Any, components: tuple[str, ...], context: str) -> Mapping[str, str]:
    """A `files` field: exactly one object for each of `components`."""
    files = _names(value, context, "files")
    _fields(
        files,
        components,
        context,
        missing="field 'files' has no component {!r}",
        unknown="field 'files' has an unknown component {!r}",
    )
    return files


def _names(value: Any, context: str, field: str) -> dict[str, str]:
    """A mapping of names to object names. Each object name must be a key of `objects`,
    which checks them (in bulk: a manifest names thousands)."""
    names = _mapping(value, context, field)
    if not set(map(type, names.values())) <= {str}:
        key = next(k for k, v in names.items() if type(v) is not str)
        raise ManifestError(f"{context}field '{field}.{key}' is not an object name")
    return names


def _fields(
    raw: Mapping[str, Any],
    names: tuple[str, ...],
    context: str,
    missing: str = "field {!r} is missing",
    unknown: str = "field {!r} is not a manifest field",
) -> Mapping[str, Any]:
    """`raw`, if its keys are exactly `names`; else the error naming the first missing one
    (in `names` order) or the first unknown one (sorted)."""
    if len(raw) != len(names) or raw.keys() != set(names):
        absent = [n for n in names if n not in raw]
        if absent:
            raise ManifestError(context + missing.format(absent[0]))
        raise ManifestError(context + unknown.format(min(raw.keys() - set(names))))
    return raw


def _mapping(value: Any, context: str, field: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise ManifestError(f"{context}field {field!r} is not an object")
    return value


def _list(value: Any, context: str, field: str) -> list[Any]:
    if type(value) is not list:
        raise ManifestError(f"{context}field {field!r} is not a list")
    return value


def _string(value: Any, context: str, field: str) -> str:
    if type(value) is not str:
        raise ManifestError(f"{context}field {field!r} is not a string")
    return value


def _integer(value: Any, context: str, field: str) -> int:
    if type(value) is not int:
        raise ManifestError(f"{context}field {field!r} is not an integer")
    return value


def _count(value: Any, context: str, field: str) -> int:
    if type(value) is not int or value < 0:
        raise ManifestError(f"{context}field {field!r} is not a count (an integer >= 0)")
    return value
