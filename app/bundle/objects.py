"""The content-addressed object store of a bundle directory (layout: app/bundle/format.py).

Every data file of a bundle is an object named by the SHA-256 of its bytes. An object is
written to a temporary name, fsynced and renamed into place, so a name that exists always
holds complete bytes; it is never modified afterwards (mode 0444). Two generations that
share data share the object, which is what makes publishing and shipping incremental.

`verified.json` records, for each object checked byte for byte since it was written into
this directory (by the builder, which hashes what it writes, or by install_bundle.py, which
re-hashes what it copies), the inode and modification time it had then. A server trusts
exactly those files and checks the CRC-32 of any other one before using it, so start-up
does not re-read a multi-gigabyte archive, while a file copied by hand, truncated or
rewritten since is still caught (docs/publishing.md, "Integrity").
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import secrets
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import orjson

from app.bundle import format as fmt


class ObjectEntry(NamedTuple):
    """What the manifest records of an object (its name is the SHA-256 of its bytes)."""

    size: int
    crc32: int


_TMP_PREFIX = ".tmp-"


class ObjectWriter:
    """Streams one object to a temporary file, hashing as it goes."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self._tmp = store.dir / f"{_TMP_PREFIX}{secrets.token_hex(8)}"
        self._fh = open(self._tmp, "wb")  # noqa: SIM115 - closed in commit()/abort()
        self._sha = hashlib.sha256()
        self._crc = 0
        self.size = 0

    def write(self, data: bytes | memoryview) -> None:
        if data:
            self._fh.write(data)
            self._sha.update(data)
            self._crc = zlib.crc32(data, self._crc)
            self.size += len(data)

    def name(self) -> str:
        """The content name of the bytes written so far."""
        return self._sha.hexdigest()

    def commit(self) -> tuple[str, ObjectEntry]:
        """Make the object durable under its content name; returns (name, entry)."""
        name = self._sha.hexdigest()
        final = self._store.path(name)
        if final.exists():
            # Same bytes already stored (another segment, another build): nothing to make
            # durable. Most of a publish's objects are such (every unchanged generation file).
            self._fh.close()
            self._tmp.unlink()
        else:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            os.chmod(self._tmp, 0o444)
            os.rename(self._tmp, final)
        return name, ObjectEntry(self.size, self._crc)

    def commit_into(
        self, files: dict[str, str], entries: dict[str, ObjectEntry], component: str
    ) -> None:
        """commit(), recording the object as `component` of `files` and its entry."""
        obj, entry = self.commit()
        files[component], entries[obj] = obj, entry

    def abort(self) -> None:
        self._fh.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()


class ObjectStore:
    def __init__(self, bundle_dir: Path) -> None:
        self.bundle_dir = bundle_dir
        self.dir = bundle_dir / fmt.OBJECTS

    def create(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        return self.dir / name

    def put(self, data: bytes | memoryview) -> tuple[str, ObjectEntry]:
        writer = ObjectWriter(self)
        try:
            writer.write(data)
            return writer.commit()
        except BaseException:
            writer.abort()
            raise

    @contextlib.contextmanager
    def writer(self) -> Iterator[ObjectWriter]:
        writer = ObjectWriter(self)
        try:
            yield writer
        except BaseException:
            writer.abort()
            raise

    def has(self, name: str, size: int) -> bool:
        try:
            return self.path(name).stat().st_size == size
        except FileNotFoundError:
            return False

    def remove_temporaries(self) -> None:
        """Leftovers of a build or install that was killed (call under the output lock)."""
        if self.dir.is_dir():
            for path in self.dir.glob(f"{_TMP_PREFIX}*"):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()

    # -- the verified record --------------------------------------------------------------

    def verified(self) -> dict[str, list[int]]:
        try:
            record = orjson.loads((self.bundle_dir / fmt.VERIFIED).read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return {}
        return record if isinstance(record, dict) else {}

    def record_verified(self, names: Iterable[str], keep: set[str]) -> None:
        """Add `names` (just hashed) to the record, dropping anything not in `keep`."""
        record = {name: stamp for name, stamp in self.verified().items() if name in keep}
        for name in names:
            st = self.path(name).stat()
            record[name] = [st.st_ino, st.st_mtime_ns, st.st_size]
        write_atomically(
            self.bundle_dir / fmt.VERIFIED, orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
        )

    def collect_garbage(self, keep: set[str]) -> int:
        """Delete objects no kept manifest names; returns how many. Workers still serving a
        deleted object keep their mapping (the inode lives until the last one closes)."""
        removed = 0
        for path in self.dir.iterdir():
            if path.name not in keep and not path.name.startswith(_TMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
        return removed


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data`: a reader sees the old file or the new one, never a mix."""
    tmp = path.with_name(f"{_TMP_PREFIX}{path.name}.{secrets.token_hex(4)}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o644)
    os.rename(tmp, path)
    fsync_dir(path.parent)


def map_file(path: Path) -> memoryview:
    """A read-only mapping of a whole file (empty files give an empty view)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ))
