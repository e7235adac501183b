"""Loading a built bundle (layout in app.bundle.format): `Bundle.load` maps its objects,
checks them, and builds the loaded `Bundle`: its languages (app.bundle.language, over
segments read by app.bundle.segment) and its site documents (app.bundle.site).

Nothing here parses article JSON: responses are slices of the mapped objects. Worker
processes map the same files, so article bytes live once in the page cache. Loading a new
generation maps only the objects the served one lacks, so a publish costs the worker what
the publish changed.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson

from app.bundle import format as fmt
from app.bundle.errors import BundleError, BundleUnavailable
from app.bundle.language import LanguageData
from app.bundle.manifest import SITE, Manifest, ManifestError, parse
from app.bundle.objects import ObjectEntry
from app.bundle.site import SiteData
from app.languages import LANGUAGES


class Unavailable:
    """Stands in for a language (or the site) whose objects are damaged: any use raises
    BundleUnavailable. Requests for what is intact never meet it, so they pay nothing."""

    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail

    def __getattr__(self, name: str) -> Any:
        raise BundleUnavailable(self.detail)


_EMPTY = memoryview(b"")

# "trusted": check sizes, and the CRC-32 of objects not in verified.json (what a server does);
# "crc32": the CRC-32 of every object; "sha256": every object against its name (a full scrub).
Verify = Literal["trusted", "crc32", "sha256"]

# (st_dev, st_ino, st_mtime_ns, st_size) of the manifest a bundle was loaded from.
Identity = tuple[int, int, int, int]


class Mapped(NamedTuple):
    """An object as a worker mapped it, with the stat it had then."""

    view: memoryview
    stamp: list[int]  # [inode, mtime_ns, size]: verified.json's record of a checked file
    ctime_ns: int  # changes with any write, truncation or chmod, even one that restores mtime


class Bundle:
    """A loaded bundle: the nine languages plus identity and provenance."""

    def __init__(
        self,
        path: Path,
        bundle_id: str,
        languages: dict[str, LanguageData],
        identity: Identity,
        views: dict[str, Mapped],
        site: SiteData,
        owners: dict[str, frozenset[str]],
        damage: dict[str, str] | None = None,
    ) -> None:
        self.site = site
        self.path = path
        self.bundle_id = bundle_id
        self.languages = languages
        self.identity = identity
        # object name -> its mapping and stat when mapped: the next generation reuses a
        # mapping whose file is still that same file, and find_damage compares the stat.
        self.views = views
        self.owners = owners  # language code or SITE -> the objects it reads
        # object name -> what is wrong with it; what reads it is Unavailable (empty: whole).
        self.damage = damage or {}

    def degraded(self, damage: Mapping[str, str]) -> Bundle:
        """This bundle without the objects in `damage`: the languages (or the site) that read
        them become Unavailable, the rest is shared unchanged. Their mappings are dropped
        (unmapped once the requests holding them finish) and never reused."""
        damage = {**self.damage, **damage}
        languages = {
            language: _unavailable(language, self.owners[language], damage, data)
            for language, data in self.languages.items()
        }
        site = _unavailable(SITE, self.owners[SITE], damage, self.site)
        views = {name: mapped for name, mapped in self.views.items() if name not in damage}
        return Bundle(
            self.path, self.bundle_id, languages, self.identity, views, site, self.owners, damage
        )

    def has_article(self, language: str, article_id: str) -> bool:
        data = self.languages.get(language)
        return data is not None and data.find(article_id) is not None

    def article_json(self, language: str, article_id: str) -> memoryview | None:
        """The Article JSON of a served article (comment moderation reads its title and
        publication time), or None."""
        data = self.languages.get(language)
        gid = None if data is None else data.find(article_id)
        return None if data is None or gid is None else data.record_by_gid(gid)

    def is_retracted(self, language: str, article_id: str) -> bool:
        data = self.languages.get(language)
        return data is not None and article_id in data.retracted

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        verify: Verify = "trusted",
        reuse: Bundle | None = None,
        manifest_name: str = fmt.MANIFEST,
        partial: bool = False,
        recheck: Collection[str] = (),
    ) -> Bundle:
        """Map and check a bundle; raises BundleError saying what is wrong.

        Objects the `reuse` bundle already maps (and checked) are taken from it. Every other
        object is checked per `verify` before anything is served from it, and so is every
        object in `recheck` (files found changed while served: verified.json's record of
        them is no longer evidence). With `partial`, an object that is missing, of the
        wrong size or fails its checksum does not fail the load: what reads it is left
        Unavailable and the problem is in `damage` (the manifest must still be sound).
        """
        if sys.byteorder != "little":
            raise BundleError("bundles are little-endian; this machine is not")
        try:
            dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise BundleError(f"cannot open bundle directory {path}: {exc.strerror}") from None
        damage: dict[str, str] = {}
        try:
            manifest, identity = _read_manifest(dir_fd, path, manifest_name)
            entries = manifest.objects
            owners = manifest.owners()
            known = reuse.views if reuse is not None and verify == "trusted" else {}
            verified = _read_verified(dir_fd) if verify == "trusted" else {}
            views: dict[str, Mapped] = {}
            to_check: dict[str, memoryview] = {}
            for name in sorted(frozenset().union(*owners.values())):
                try:
                    if (
                        name in known
                        and name not in recheck
                        and _stamp(dir_fd, path, name) == known[name].stamp
                    ):
                        views[name] = known[name]
                        continue
                    mapped = views[name] = _map_object(dir_fd, path, name, entries[name])
                except BundleError as exc:
                    if not partial:
                        raise
                    damage[name] = str(exc)
                    continue
                if verify != "trusted" or name in recheck or verified.get(name) != mapped.stamp:
                    to_check[name] = mapped.view
        finally:
            os.close(dir_fd)
        failed = _verify_contents(
            path, to_check, entries, "sha256" if verify == "sha256" else "crc32"
        )
        if failed and not partial:
            raise BundleError(next(iter(failed.values())))
        for name, problem in failed.items():
            damage[name] = problem
            del views[name]
        mapped_views = {name: m.view for name, m in views.items()}
        languages = {}
        for language in LANGUAGES:
            if not damage.keys().isdisjoint(owners[language]):
                languages[language] = _unavailable(language, owners[language], damage, None)
                continue
            try:
                languages[language] = LanguageData(
                    language, manifest.languages[language], mapped_views
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise BundleError(f"{path}: language {language}: {exc!r}") from None
        if not damage.keys().isdisjoint(owners[SITE]):
            site = _unavailable(SITE, owners[SITE], damage, None)
        else:
            try:
                site = SiteData.from_manifest(manifest.site, mapped_views)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise BundleError(f"{path}: site: {exc!r}") from None
        return cls(path, manifest.bundle_id, languages, identity, views, site, owners, damage)


def find_damage(bundle: Bundle, *, moved: bool) -> dict[str, str]:
    """The served objects whose file changed since it was mapped, from stat alone: no byte
    of a mapping is read (reading past the end of a truncated one raises SIGBUS).

    A file changed in place (same inode: truncated, rewritten, even to the same mtime)
    changes what the mapping shows. With `moved`, a file that vanished or was replaced by
    another inode also counts: the mapping still holds the checked bytes, but the directory
    no longer does, so no new worker could load it (pass it only while the manifest on disk
    is the served one: a directory swapped for another is the reload's business)."""
    damage: dict[str, str] = {}
    try:
        dir_fd = os.open(bundle.path / fmt.OBJECTS, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        if moved:
            return dict.fromkeys(bundle.views, f"{fmt.OBJECTS}/: {exc.strerror}")
        return damage
    try:
        for name, (_, (ino, mtime_ns, size), ctime_ns) in bundle.views.items():
            try:
                st = os.stat(name, dir_fd=dir_fd)
            except OSError as exc:
                if moved:
                    damage[name] = f"{fmt.OBJECTS}/{name}: {exc.strerror}"
                continue
            if st.st_ino != ino:
                if moved:
                    damage[name] = f"{fmt.OBJECTS}/{name}: replaced by another file"
            elif st.st_size != size:
                damage[name] = f"{fmt.OBJECTS}/{name}: size changed from {size} to {st.st_size}"
            elif st.st_mtime_ns != mtime_ns or st.st_ctime_ns != ctime_ns:
                damage[name] = f"{fmt.OBJECTS}/{name}: changed in place since it was checked"
    finally:
        os.close(dir_fd)
    return damage


def _unavailable(owner: str, names: frozenset[str], damage: Mapping[str, str], data: Any) -> Any:
    """`data` if none of its objects is damaged, else an Unavailable saying what is."""
    if damage.keys().isdisjoint(names):
        return data
    what = "the sitemaps" if owner == SITE else f"language {owner!r}"
    return Unavailable(
        f"Service unavailable: this instance's bundle files for {what} are damaged; "
        "it serves them again once they are repaired"
    )


def check_objects(path: Path, manifest: Manifest) -> None:
    """What Bundle.load checks of every object a manifest names (size; CRC-32 unless
    verified.json vouches for the file), without loading the languages: the builder reads
    article bytes of the bundle it updates, and must not build on a damaged one."""
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        verified = _read_verified(dir_fd)
        to_check: dict[str, memoryview] = {}
        for name in sorted(manifest.objects):
            mapped = _map_object(dir_fd, path, name, manifest.objects[name])
            if verified.get(name) != mapped.stamp:
                to_check[name] = mapped.view
    finally:
        os.close(dir_fd)
    failed = _verify_contents(path, to_check, manifest.objects, "crc32")
    if failed:
        raise BundleError(next(iter(failed.values())))


def _read_manifest(dir_fd: int, path: Path, name: str) -> tuple[Manifest, Identity]:
    try:
        fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{name}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        raw = fh.read()
    try:
        manifest = parse(raw, f"{path}/{fmt.MANIFEST}")
    except ManifestError as exc:
        raise BundleError(str(exc)) from None
    return manifest, (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def _read_verified(dir_fd: int) -> dict[str, list[int]]:
    try:
        fd = os.open(fmt.VERIFIED, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as fh:
        try:
            record = orjson.loads(fh.read())
        except orjson.JSONDecodeError:
            return {}
    return record if isinstance(record, dict) else {}


def _checksum(view: memoryview, verify: Literal["crc32", "sha256"]) -> str | int:
    if verify == "sha256":
        return hashlib.sha256(view).hexdigest()
    return zlib.crc32(view)


def _verify_contents(
    path: Path,
    files: Mapping[str, memoryview],
    entries: Mapping[str, ObjectEntry],
    verify: Literal["crc32", "sha256"],
) -> dict[str, str]:
    """The objects whose checksum does not match, largest first, each with the problem."""
    if not files:
        return {}
    # Both checksums release the GIL on large buffers: hash files on every core at once.
    names = sorted(files, key=lambda name: -len(files[name]))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        sums = dict(zip(names, pool.map(lambda n: _checksum(files[n], verify), names), strict=True))
    return {
        name: f"{path}/{fmt.OBJECTS}/{name}: checksum mismatch ({verify}): corrupted file"
        for name in names
        if sums[name] != (name if verify == "sha256" else entries[name].crc32)
    }


def _stamp(dir_fd: int, path: Path, name: str) -> list[int]:
    try:
        st = os.stat(f"{fmt.OBJECTS}/{name}", dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{fmt.OBJECTS}/{name}: {exc.strerror}") from None
    return [st.st_ino, st.st_mtime_ns, st.st_size]


def _os_problem(exc: OSError) -> str:
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        # Python's mmap keeps a descriptor per mapping (docs/operations.md, "Open files").
        return (
            f"{exc.strerror}: every mapped bundle object holds a file descriptor; raise the "
            "open-file limit (ulimit -n, LimitNOFILE, the container's nofile)"
        )
    return str(exc.strerror)


def _map_object(dir_fd: int, path: Path, name: str, entry: ObjectEntry) -> Mapped:
    """The object's mapping and the stat it had (the manifest parser vouches for `name`)."""
    rel = f"{fmt.OBJECTS}/{name}"
    try:
        fd = os.open(rel, os.O_RDONLY, dir_fd=dir_fd)
    except OSError as exc:
        raise BundleError(f"{path}/{rel}: {_os_problem(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BundleError(f"{path}/{rel}: not a regular file")
        if st.st_size != entry.size:
            raise BundleError(
                f"{path}/{rel}: size {st.st_size}, manifest says {entry.size} "
                "(truncated or replaced file)"
            )
        if st.st_size == 0:
            view = _EMPTY
        else:
            try:
                view = memoryview(mmap.mmap(fd, st.st_size, access=mmap.ACCESS_READ))
            except OSError as exc:
                raise BundleError(f"{path}/{rel}: {_os_problem(exc)}") from None
    finally:
        os.close(fd)
    return Mapped(view, [st.st_ino, st.st_mtime_ns, st.st_size], st.st_ctime_ns)
