"""Memory-mapped, read-only access to a built bundle (layout in app.bundle.format).

Nothing here parses article JSON: responses are slices of the mapped files. Worker
processes map the same files, so article bytes live once in the page cache.
"""

from __future__ import annotations

import bisect
import hashlib
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from app.bundle import format as fmt
from app.languages import LANGUAGES
from app.search.searcher import Searcher


class BundleError(Exception):
    """The bundle cannot be served: missing, corrupt, or of an incompatible format."""


_EMPTY = memoryview(b"")
_NO_POSITIONS = memoryview(b"").cast(fmt.POSITION_TYPECODE)

Verify = Literal["crc32", "sha256"]

# (st_dev, st_ino, st_mtime_ns, st_size) of the manifest a bundle was loaded from.
Identity = tuple[int, int, int, int]


class _SortedIds:
    """Sequence view of ids.bin for `bisect`: item i is the i-th id in byte order."""

    __slots__ = ("_bin", "_off")

    def __init__(self, ids_bin: memoryview, ids_off: memoryview) -> None:
        self._bin = ids_bin
        self._off = ids_off

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i: int) -> bytes:
        return self._bin[self._off[i] : self._off[i + 1]].tobytes()


@dataclass(frozen=True, slots=True)
class CategoryRange:
    start: int
    count: int


class LanguageData:
    """One language of a bundle."""

    def __init__(
        self, language: str, meta: Mapping[str, Any], files: Mapping[str, memoryview]
    ) -> None:
        self.language = language
        self.count: int = meta["articles"]
        self.content_hash: str = meta["content_hash"]
        self._articles = files[fmt.ARTICLES_BIN]
        self._articles_off = files[fmt.ARTICLES_OFF].cast(fmt.OFFSET_TYPECODE)
        self._summaries = files[fmt.SUMMARIES_BIN]
        self._summaries_off = files[fmt.SUMMARIES_OFF].cast(fmt.OFFSET_TYPECODE)
        self._etags = files[fmt.ETAGS_BIN]
        ids_off = files[fmt.IDS_OFF].cast(fmt.OFFSET_TYPECODE)
        self._ids = _SortedIds(files[fmt.IDS_BIN], ids_off)
        self._ids_pos = files[fmt.IDS_POS].cast(fmt.POSITION_TYPECODE)
        self.categories_json: bytes = files[fmt.CATEGORIES_JSON].tobytes()
        self._category_pos = files[fmt.CATEGORY_POS].cast(fmt.POSITION_TYPECODE)
        self._categories: dict[str, CategoryRange] = {
            name: CategoryRange(start, count) for name, start, count in meta["categories"]
        }
        self.searcher = Searcher(
            language,
            {name: view for name, view in files.items() if name.startswith(fmt.SEARCH_PREFIX)},
        )
        self._check_shape(files)

    def _check_shape(self, files: Mapping[str, memoryview]) -> None:
        n = self.count
        for name, blob, off in (
            (fmt.ARTICLES_OFF, self._articles, self._articles_off),
            (fmt.SUMMARIES_OFF, self._summaries, self._summaries_off),
        ):
            end = len(blob) + 1 if n else 0  # the last record is followed by a virtual comma
            if len(off) != n + 1 or off[n] != end or off[0] != 0:
                raise BundleError(f"{self.language}/{name}: offsets do not match the data")
        if len(self._ids) != n or len(self._ids_pos) != n:
            raise BundleError(f"{self.language}/ids: index size does not match {n} articles")
        if len(self._etags) != n * fmt.ETAG_BYTES:
            raise BundleError(f"{self.language}/{fmt.ETAGS_BIN}: size does not match")
        if n and max(self._ids_pos) >= n:
            raise BundleError(f"{self.language}/{fmt.IDS_POS}: position out of range")
        if sum(r.count for r in self._categories.values()) != len(self._category_pos):
            raise BundleError(f"{self.language}/{fmt.CATEGORY_POS}: size does not match")

    # -- lookups -----------------------------------------------------------------------

    def find(self, article_id: str) -> int | None:
        """List position of the article with this id, or None."""
        key = article_id.encode("utf-8", "surrogatepass")
        i = bisect.bisect_left(self._ids, key)
        if i < len(self._ids) and self._ids[i] == key:
            return self._ids_pos[i]
        return None

    def article(self, pos: int) -> memoryview:
        off = self._articles_off
        return self._articles[off[pos] : off[pos + 1] - 1]

    def etag(self, pos: int) -> str:
        return self._etags[pos * fmt.ETAG_BYTES : (pos + 1) * fmt.ETAG_BYTES].hex()

    def articles_run(self, start: int, stop: int) -> memoryview:
        """Records start..stop-1 (list order) as comma-joined JSON objects."""
        if start >= stop:
            return _EMPTY
        off = self._articles_off
        return self._articles[off[start] : off[stop] - 1]

    def summaries_run(self, start: int, stop: int) -> memoryview:
        if start >= stop:
            return _EMPTY
        off = self._summaries_off
        return self._summaries[off[start] : off[stop] - 1]

    def category_positions(self, category: str) -> memoryview:
        """List positions of one category's articles, in list order (empty if unknown)."""
        r = self._categories.get(category)
        if r is None:
            return _NO_POSITIONS
        return self._category_pos[r.start : r.start + r.count]


class Bundle:
    """A loaded bundle: the nine languages plus identity and provenance."""

    def __init__(
        self, path: Path, bundle_id: str, languages: dict[str, LanguageData], identity: Identity
    ) -> None:
        self.path = path
        self.bundle_id = bundle_id
        self.languages = languages
        self.identity = identity

    def has_article(self, language: str, article_id: str) -> bool:
        data = self.languages.get(language)
        return data is not None and data.find(article_id) is not None

    @classmethod
    def load(cls, path: Path, *, verify: Verify = "crc32") -> Bundle:
        """Map and check a bundle; raises BundleError saying what is wrong.

        Files are opened relative to one directory descriptor, so a builder swapping the
        directory mid-load cannot mix files of two bundles. `verify` checks every byte of
        every file against the manifest: "crc32" (what a server does on every load; fast,
        and catches truncation and corruption) or "sha256" (installing a shipped bundle).
        """
        if sys.byteorder != "little":
            raise BundleError("bundles are little-endian; this machine is not")
        try:
            dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise BundleError(f"cannot open bundle directory {path}: {exc.strerror}") from None
        try:
            manifest, identity = _read_manifest(dir_fd, path)
            files = {
                name: _map_file(dir_fd, path, name, entry)
                for name, entry in manifest["files"].items()
            }
        finally:
            os.close(dir_fd)
        _verify_contents(path, files, manifest["files"], verify)
        if bundle_id_for(manifest["files"]) != manifest["bundle_id"]:
            raise BundleError(f"{path}: bundle_id does not match the manifest's file table")
        languages: dict[str, LanguageData] = {}
        for language in LANGUAGES:
            meta = manifest["languages"].get(language)
            if meta is None:
                raise BundleError(f"{path}: manifest has no language {language!r}")
            prefix = f"{language}/"
            lang_files = {
                name.removeprefix(prefix): view
                for name, view in files.items()
                if name.startswith(prefix)
            }
            try:
                languages[language] = LanguageData(language, meta, lang_files)
            except (KeyError, TypeError, ValueError) as exc:
                raise BundleError(f"{path}: language {language}: {exc!r}") from None
        return cls(path, manifest["bundle_id"], languages, identity)


def bundle_id_for(files: Mapping[str, Mapping[str, Any]]) -> str:
    """Content-derived id: a digest of the (name, size, sha256) table, no timestamps."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}\0{files[name]['size']}\0{files[name]['sha256']}\n".encode())
    return h.hexdigest()[:20]


def _read_manifest(dir_fd: int, path: Path) -> tuple[dict[str, Any], Identity]:
    try:
        fd = os.open(fmt.MANIFEST, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{fmt.MANIFEST}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        raw = fh.read()
    try:
        manifest = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BundleError(f"{path}/{fmt.MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt.FORMAT_NAME:
        raise BundleError(f"{path}/{fmt.MANIFEST}: not a {fmt.FORMAT_NAME} manifest")
    version = manifest.get("format_version")
    if version != fmt.FORMAT_VERSION:
        raise BundleError(
            f"{path}: bundle format version {version!r}, this server reads version "
            f"{fmt.FORMAT_VERSION}; rebuild the bundle with this release's builder"
        )
    for key, kind in (("bundle_id", str), ("files", dict), ("languages", dict)):
        if not isinstance(manifest.get(key), kind):
            raise BundleError(f"{path}/{fmt.MANIFEST}: field {key!r} missing or mistyped")
    return manifest, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _checksum(view: memoryview, verify: Verify) -> str | int:
    if verify == "sha256":
        return hashlib.sha256(view).hexdigest()
    return zlib.crc32(view)


def _verify_contents(
    path: Path,
    files: Mapping[str, memoryview],
    entries: Mapping[str, Mapping[str, Any]],
    verify: Verify,
) -> None:
    # Both checksums release the GIL on large buffers: hash files on every core at once.
    names = sorted(files, key=lambda name: -len(files[name]))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        sums = dict(zip(names, pool.map(lambda n: _checksum(files[n], verify), names), strict=True))
    for name in names:
        if sums[name] != entries[name].get(verify):
            raise BundleError(f"{path}/{name}: checksum mismatch ({verify}): corrupted file")


def _map_file(dir_fd: int, path: Path, name: str, entry: Mapping[str, Any]) -> memoryview:
    if name.startswith("/") or ".." in name.split("/"):
        raise BundleError(f"{path}: manifest names a file outside the bundle: {name!r}")
    if not isinstance(entry, Mapping):
        raise BundleError(f"{path}/{fmt.MANIFEST}: file entry {name!r} is not an object")
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{name}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BundleError(f"{path}/{name}: not a regular file")
        if st.st_size != entry.get("size"):
            raise BundleError(
                f"{path}/{name}: size {st.st_size}, manifest says {entry.get('size')} "
                "(truncated or replaced file)"
            )
        if st.st_size == 0:
            view = _EMPTY
        else:
            view = memoryview(mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ))
    finally:
        os.close(fd)
    return view
