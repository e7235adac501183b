"""The typed manifest (app.bundle.manifest): parse and serialise are inverses with stable
bytes, the builder's manifest.json is what serialise writes, and every invalid field is
refused with an error naming it. Also the versions check and the commit protocol's switch."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import versions
from app.bundle import format as fmt
from app.bundle.commit import CANDIDATE, switch
from app.bundle.manifest import (
    Language,
    Manifest,
    ManifestError,
    Segment,
    Site,
    parse,
    serialise,
)
from app.bundle.objects import ObjectEntry
from app.bundle.versions import current, mismatch
from app.languages import LANGUAGES

_names = st.binary(min_size=4, max_size=4).map(lambda b: hashlib.sha256(b).hexdigest())
_counts = st.integers(min_value=0, max_value=2**40)


def _files(components: tuple[str, ...]) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({c: _names for c in components})


_segments = st.builds(Segment, _counts, _files(fmt.SEGMENT_FILES))


@st.composite
def _languages(draw: st.DrawFn) -> Language:
    segments = tuple(draw(st.lists(_segments, max_size=3)))
    return Language(
        articles=draw(_counts),
        retracted=draw(_counts),
        content_hash=draw(st.text(max_size=20)),
        codec=draw(st.text(max_size=6)),
        categories=tuple(draw(st.lists(st.tuples(st.text(max_size=8), _counts, _counts)))),
        segments=segments,
        deleted=tuple(draw(st.lists(_counts, min_size=len(segments), max_size=len(segments)))),
        files=draw(_files(fmt.GENERATION_FILES)),
        feeds=draw(st.dictionaries(st.text(max_size=8), _names, max_size=3)),
    )


_sites = st.builds(
    Site,
    _files(fmt.SITE_FILES),
    st.text(max_size=6),
    st.integers(min_value=1, max_value=50_000),
    st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=3),
    st.lists(st.integers(min_value=-(2**62), max_value=2**62)).map(tuple),
    st.lists(_counts).map(tuple),
)


@st.composite
def manifests(draw: st.DrawFn) -> Manifest:
    languages = {code: draw(_languages()) for code in LANGUAGES}
    site = draw(_sites)
    entry = st.builds(ObjectEntry, _counts, st.integers(min_value=0, max_value=2**32 - 1))
    names = set(site.files.values()).union(*(meta.objects() for meta in languages.values()))
    return Manifest.assemble(languages, site, {name: draw(entry) for name in names})


@settings(max_examples=40, deadline=None)
@given(manifests())
def test_parse_inverts_serialise_with_stable_bytes(manifest: Manifest) -> None:
    data = serialise(manifest)
    again = parse(data, "manifest.json")
    assert again == manifest
    assert serialise(again) == data


def test_the_built_manifest_is_what_serialise_writes(bundle: tuple[Path, str]) -> None:
    path, bundle_id = bundle
    data = (path / fmt.MANIFEST).read_bytes()
    manifest = parse(data, "manifest.json")
    assert manifest.bundle_id == bundle_id
    assert serialise(manifest) == data
    # The components are the single list: each entry names an object for each of them.
    for meta in manifest.languages.values():
        assert set(meta.files) == set(fmt.GENERATION_FILES)
        assert all(set(s.files) == set(fmt.SEGMENT_FILES) for s in meta.segments)
    assert set(manifest.site.files) == set(fmt.SITE_FILES)


def _valid() -> dict[str, Any]:
    """A valid manifest in its JSON form: every language with two segments."""

    def files(components: tuple[str, ...], owner: str) -> dict[str, str]:
        return {c: hashlib.sha256(f"{owner}/{c}".encode()).hexdigest() for c in components}

    languages = {
        code: Language(
            articles=3,
            retracted=0,
            content_hash=code * 3,
            codec="c0ffee",
            categories=(("politics", 0, 3),),
            segments=tuple(Segment(2, files(fmt.SEGMENT_FILES, f"{code}{n}")) for n in range(2)),
            deleted=(1, 0),
            files=files(fmt.GENERATION_FILES, code),
            feeds=files(("", "politics"), f"{code}-feeds"),
        )
        for code in LANGUAGES
    }
    site = Site(files(fmt.SITE_FILES, "site"), "c0ffee", 10, {"base": "/"}, (2, 1), (10, 20))
    names = set(site.files.values()).union(*(m.objects() for m in languages.values()))
    manifest = Manifest.assemble(languages, site, {n: ObjectEntry(1, 2) for n in names})
    return orjson.loads(serialise(manifest))


Edit = Callable[[dict[str, Any]], object]


def _set(path: str, value: object) -> Edit:
    *parents, last = path.split("/")

    def edit(raw: dict[str, Any]) -> None:
        node: Any = raw
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is _DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


_DELETE = object()


INVALID: dict[str, tuple[Edit, str]] = {
    "bundle_id missing": (_set("bundle_id", _DELETE), "field 'bundle_id' is missing"),
    "bundle_id mistyped": (_set("bundle_id", 5), "field 'bundle_id' is not a string"),
    "bundle_id tampered": (_set("bundle_id", "0" * 20), "field 'bundle_id' does not match"),
    "unknown field": (_set("extra", 1), "field 'extra' is not a manifest field"),
    "language missing": (_set("languages/en", _DELETE), "no language 'en'"),
    "language unknown": (_set("languages/xx", {}), "unknown language 'xx'"),
    "articles negative": (_set("languages/en/articles", -1), "language en: field 'articles'"),
    "codec mistyped": (_set("languages/ko/codec", 3), "language ko: field 'codec'"),
    "language field unknown": (
        _set("languages/en/shards", []),
        "language en: field 'shards' is not a manifest field",
    ),
    "category malformed": (
        _set("languages/en/categories", [["politics"]]),
        "language en: field 'categories[0]'",
    ),
    "deleted per segment": (_set("languages/en/deleted", [0]), "field 'deleted'"),
    "segment docs": (_set("languages/en/segments/0/docs", "x"), "segment 0: field 'docs'"),
    "segment component missing": (
        _set("languages/en/segments/0/files/articles.bin", _DELETE),
        "segment 0: field 'files' has no component 'articles.bin'",
    ),
    "segment component unknown": (
        _set("languages/en/segments/0/files/extra.bin", "a" * 64),
        "segment 0: field 'files' has an unknown component 'extra.bin'",
    ),
    "generation component missing": (
        _set(f"languages/ja/files/{fmt.ORDER}", _DELETE),
        f"language ja: field 'files' has no component '{fmt.ORDER}'",
    ),
    "object name": (
        _set(f"languages/ja/files/{fmt.ORDER}", "../../etc/passwd"),
        f"language ja: field 'files.{fmt.ORDER}' is not an object name",
    ),
    "feed object name": (_set("languages/ja/feeds", {"": 5}), "field 'feeds.' is not an object"),
    "site missing": (_set("site", _DELETE), "field 'site' is missing"),
    "site page size": (
        _set("site/sitemap_page_urls", 0),
        "site: field 'sitemap_page_urls' must be at least 1",
    ),
    "site news": (_set("site/news/ends", ["a"]), "site: field 'news.ends[0]'"),
    "site urls": (_set("site/public_urls", {"base": 1}), "site: field 'public_urls.base'"),
    "site component": (
        _set(f"site/files/{fmt.SITEMAP_INDEX}", _DELETE),
        f"site: field 'files' has no component '{fmt.SITEMAP_INDEX}'",
    ),
    "objects mistyped": (_set("objects", []), "field 'objects' is not an object"),
    "format version": (
        _set("format_version", versions.BUNDLE_FORMAT_VERSION - 1),
        f"bundle format version {versions.BUNDLE_FORMAT_VERSION - 1}, this release reads version "
        f"{versions.BUNDLE_FORMAT_VERSION}",
    ),
    "format name": (_set("format", "other"), "not a news-bundle manifest"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_each_invalid_field_is_named(case: str) -> None:
    edit, message = INVALID[case]
    raw = _valid()
    parse(orjson.dumps(raw), "m")  # valid before the edit
    edit(raw)
    with pytest.raises(ManifestError) as caught:
        parse(orjson.dumps(raw), "/srv/bundle/manifest.json")
    assert str(caught.value).startswith("/srv/bundle/manifest.json: ")
    assert message in str(caught.value)


def test_objects_named_by_a_component_need_an_entry() -> None:
    raw = _valid()
    name = raw["languages"]["en"]["files"][fmt.ORDER]
    raw["objects"][name] = 5
    with pytest.raises(ManifestError, match=f"object {name} has no entry"):
        parse(orjson.dumps(raw), "m")
    del raw["objects"][name]
    with pytest.raises(ManifestError, match=f"object {name} has no entry"):
        parse(orjson.dumps(raw), "m")


def test_not_json_is_refused() -> None:
    with pytest.raises(ManifestError, match="m: not valid JSON"):
        parse(b'{"format": "news-bundle", ', "m")


def test_version_mismatch_names_the_version() -> None:
    assert mismatch(current()) is None
    assert mismatch({"codec": "c0ffee"}) == (
        f"compression codec 'c0ffee', this release reads version {current()['codec']!r}"
    )
    assert "search analyser version" in str(mismatch({"analyzer": "0"}))


def test_switch_keeps_the_served_manifest_when_the_check_refuses(tmp_path: Path) -> None:
    (tmp_path / fmt.MANIFEST).write_bytes(b"old")

    def refuse(name: str) -> None:
        assert (tmp_path / name).read_bytes() == b"new"
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        switch(tmp_path, b"new", check=refuse)
    assert (tmp_path / fmt.MANIFEST).read_bytes() == b"old"
    assert not (tmp_path / CANDIDATE).exists()
    assert not (tmp_path / fmt.PREVIOUS_MANIFEST).exists()
    switch(tmp_path, b"new")
    assert (tmp_path / fmt.MANIFEST).read_bytes() == b"new"
    assert (tmp_path / fmt.PREVIOUS_MANIFEST).read_bytes() == b"old"
