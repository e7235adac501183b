"""Writing a bundle next to its destination and swapping it in atomically.

The new bundle is written to a sibling temporary directory and fsynced; then the
destination is exchanged with it in one `renameat2(RENAME_EXCHANGE)` call, so a reader
sees either the whole old bundle or the whole new one. If anything fails before the
exchange, the destination is untouched.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import logging
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from app.bundle import format as fmt
from app.bundle.reader import bundle_id_for

log = logging.getLogger("app.build")

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class OutputError(Exception):
    """The output directory cannot be written or replaced."""


class BundleWriter:
    """Collects a bundle's files in a temporary directory beside `out_dir`."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.tmp_dir = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
        os.chmod(self.tmp_dir, 0o755)  # mkdtemp makes 0700; the server may be another user
        self.files: dict[str, dict[str, Any]] = {}
        self.languages: dict[str, Any] = {}

    def write_language(self, language: str, files: dict[str, bytes]) -> dict[str, Any]:
        """Write one language's files; returns their manifest entries. Safe in a child process."""
        (self.tmp_dir / language).mkdir()
        entries = {}
        for name in sorted(files):
            rel = f"{language}/{name}"
            _write_file(self.tmp_dir / rel, files[name])
            entries[rel] = file_entry(files[name])
        _fsync_dir(self.tmp_dir / language)
        return entries

    def add_language(self, language: str, entries: dict[str, Any], meta: dict[str, Any]) -> None:
        self.files.update(entries)
        self.languages[language] = meta

    def finish(self) -> str:
        """Write the manifest and swap the bundle into place; returns the bundle id."""
        bundle_id = bundle_id_for(self.files)
        manifest = {
            "format": fmt.FORMAT_NAME,
            "format_version": fmt.FORMAT_VERSION,
            "bundle_id": bundle_id,
            "languages": self.languages,
            "files": self.files,
        }
        _write_file(
            self.tmp_dir / fmt.MANIFEST,
            orjson.dumps(manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n",
        )
        _fsync_dir(self.tmp_dir)
        swap_into_place(self.tmp_dir, self.out_dir)
        return bundle_id

    def discard(self) -> None:
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def file_entry(data: bytes) -> dict[str, Any]:
    """Manifest entry: SHA-256 for provenance and offline checks, CRC-32 for the fast check
    every server worker runs on load (about 3x faster, and corruption is all it must catch)."""
    return {
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "crc32": zlib.crc32(data),
    }


@contextlib.contextmanager
def output_lock(out_dir: Path) -> Iterator[None]:
    """One build at a time per output directory (a lock file beside it)."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    lock_path = out_dir.parent / f".{out_dir.name}.lock"
    with open(lock_path, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"another build is writing {out_dir} (lock {lock_path})") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_replaceable(out_dir: Path) -> None:
    """Refuse to replace anything that is not a bundle (a typo must not delete a tree)."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise OutputError(f"{out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / fmt.MANIFEST).is_file():
        raise OutputError(f"{out_dir} is not empty and holds no bundle; refusing to replace it")


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rename_exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def swap_into_place(new_dir: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        os.rename(new_dir, out_dir)
    else:
        try:
            _rename_exchange(new_dir, out_dir)
        except OSError as exc:
            if exc.errno not in (errno.ENOSYS, errno.EINVAL):
                raise
            # No atomic exchange on this system/filesystem: two renames, a brief gap.
            log.warning("atomic directory exchange unavailable (%s); using two renames", exc)
            aside = new_dir.with_name(new_dir.name + ".old")
            os.rename(out_dir, aside)
            os.rename(new_dir, out_dir)
            new_dir = aside
        shutil.rmtree(new_dir)  # now holds the previous bundle
    _fsync_dir(out_dir.parent)
