"""`python scripts/install_bundle.py SRC_BUNDLE DEST_DIR` (docs/publishing.md).

Installs a bundle built elsewhere (CI) on an instance. Objects are content-addressed, so
only the ones DEST_DIR lacks are copied: a publish ships its new segments and generation
files, kilobytes to megabytes, not the archive. Each copied object is hashed and must match
its name; the new generation is then loaded and checked as a server would, and only then
does `manifest.json` switch, by the commit protocol the builder shares (app.bundle.commit):
the generation it replaces stays as `manifest.previous.json` (`--rollback` goes back to it),
and unreferenced objects are deleted.

The same command repairs DEST: an object that is missing, or whose file is not the one
verified.json recorded (truncated, rewritten, replaced), is copied again from SRC_BUNDLE and
hashed; `--scrub` also re-hashes the objects that look intact. Repairing the served
generation leaves `manifest.json` and the previous generation as they were; the workers
pick the repaired files up by themselves (docs/operations.md, "Damaged bundle files").
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from app.bundle import format as fmt
from app.bundle import manifest as manifests
from app.bundle.commit import (
    OutputError,
    check_replaceable,
    commit,
    output_lock,
    report_unchanged,
    switch,
)
from app.bundle.manifest import Manifest, ManifestError
from app.bundle.objects import ObjectEntry, ObjectStore
from app.bundle.reader import Bundle, BundleError

_COPY_CHUNK = 1 << 20


@dataclass
class InstallReport:
    bundle_id: str
    objects: int  # objects in the installed generation
    copied: int  # objects copied (the rest were already there)
    bytes_copied: int
    repaired: bool = False  # the served generation was already this one: only objects copied


def _read(path: Path) -> Manifest:
    try:
        return manifests.read(path)
    except ManifestError as exc:
        raise BundleError(str(exc)) from None


def damaged_objects(out: Path) -> list[str]:
    """Objects of the generation `out` serves that install() would copy again: missing, or
    not the file verified.json recorded (stat only: cheap enough to ask every few seconds)."""
    try:
        manifest = _read(out / fmt.MANIFEST)
    except BundleError:
        return []
    store = ObjectStore(out)
    verified = store.verified()
    return [
        name
        for name, entry in sorted(manifest.objects.items())
        if not _intact(store, name, entry, verified.get(name))
    ]


def _intact(store: ObjectStore, name: str, entry: ObjectEntry, stamp: object) -> bool:
    """Here, of its size, and the very file that was hashed when it arrived."""
    try:
        st = store.path(name).stat()
    except OSError:
        return False
    return st.st_size == entry.size and stamp == [st.st_ino, st.st_mtime_ns, st.st_size]


def install(shipped: Path, out: Path, wait: float = 600.0, scrub: bool = False) -> InstallReport:
    """Copy what is missing, verify, switch. `out` keeps serving what it served on error.

    With `scrub`, objects that look intact are hashed too, and copied again on a mismatch."""
    manifest = _read(shipped / fmt.MANIFEST)
    source = ObjectStore(shipped)
    with output_lock(out, wait=wait):
        check_replaceable(out)
        store = ObjectStore(out)
        store.create()
        store.remove_temporaries()
        verified = store.verified()
        copied: list[str] = []
        size = 0
        try:
            for name, entry in sorted(manifest.objects.items()):
                if _intact(store, name, entry, verified.get(name)) and (
                    not scrub or _sha256(store.path(name)) == name
                ):
                    continue  # already here, and checked when it arrived
                if store.path(name).exists():
                    store.path(name).unlink()  # here but unchecked: replaced by a checked copy
                with store.writer() as writer, source.path(name).open("rb") as fh:
                    while chunk := fh.read(_COPY_CHUNK):
                        writer.write(chunk)
                    got, _ = writer.commit()
                copied.append(got)
                if got != name:
                    raise BundleError(
                        f"{shipped}/{fmt.OBJECTS}/{name}: content does not match its name"
                    )
                size += entry.size
        except BaseException:
            for name in copied:  # leave DEST exactly as it was
                store.path(name).unlink(missing_ok=True)
            raise
        current = out / fmt.MANIFEST
        new_bytes = (shipped / fmt.MANIFEST).read_bytes()
        count = len(manifest.objects)
        if current.is_file() and current.read_bytes() == new_bytes:
            # Already serving exactly this: a repair at most. The manifest and the previous
            # generation (for rollback) stay; the workers reload the repaired objects.
            if copied:
                store.record_verified(copied, set(verified))
                Bundle.load(out)  # what a worker will do
            return InstallReport(
                manifest.bundle_id, count, len(copied), size, repaired=bool(copied)
            )
        commit(
            out,
            store,
            new_bytes,
            manifest,
            previous=_read(current) if current.is_file() else None,
            hashed=copied,
            check=lambda name: Bundle.load(out, manifest_name=name),  # what a worker will do
        )
        return InstallReport(manifest.bundle_id, count, len(copied), size)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_COPY_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def rollback(out: Path, wait: float = 600.0) -> str:
    """Serve `manifest.previous.json` again (the current one becomes the previous)."""
    with output_lock(out, wait=wait):
        previous = out / fmt.PREVIOUS_MANIFEST
        if not previous.is_file():
            raise OutputError(f"{out} has no previous generation to roll back to")
        bundle = Bundle.load(out, manifest_name=fmt.PREVIOUS_MANIFEST)
        switch(out, previous.read_bytes())  # the served manifest becomes the previous
        return bundle.bundle_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="install_bundle.py",
        description="Install a built bundle on an instance, copying only the files it lacks; "
        "or check or roll back an installed one.",
    )
    parser.add_argument("shipped_pos", nargs="?", type=Path, metavar="SRC_BUNDLE")
    parser.add_argument("out_pos", nargs="?", type=Path, metavar="DEST_DIR")
    parser.add_argument("--from", dest="shipped", type=Path, help="same as SRC_BUNDLE")
    parser.add_argument("--to", dest="out", type=Path, help="same as DEST_DIR")
    parser.add_argument(
        "--rollback", action="store_true", help="DEST_DIR only: serve the previous generation"
    )
    parser.add_argument(
        "--check", action="store_true", help="DEST_DIR only: re-hash every object (SHA-256)"
    )
    parser.add_argument(
        "--scrub",
        action="store_true",
        help="also re-hash the objects DEST already has (SHA-256) and copy again any that "
        "does not match its name",
    )
    parser.add_argument("--wait", type=float, default=600.0, help="seconds to wait for the lock")
    args = parser.parse_args(argv)
    if args.rollback or args.check:
        out = args.out or args.out_pos or args.shipped_pos
        if out is None:
            parser.error("give DEST_DIR")
        try:
            if args.rollback:
                print(f"rolled back {out} to bundle {rollback(out, args.wait)}")
            else:
                bundle = Bundle.load(out, verify="sha256")
                print(f"{out}: bundle {bundle.bundle_id}, every object matches its SHA-256")
        except (BundleError, OutputError, OSError) as exc:
            print(f"failed: {exc}", file=sys.stderr)
            return 1
        return 0
    shipped = args.shipped or args.shipped_pos
    out = args.out or args.out_pos
    if shipped is None or out is None:
        parser.error("give SRC_BUNDLE and DEST_DIR")
    started = time.monotonic()
    try:
        report = install(shipped, out, args.wait, scrub=args.scrub)
    except (BundleError, OutputError, OSError) as exc:
        return report_unchanged("install", out, str(exc))
    done = "repaired" if report.repaired else "installed"
    print(
        f"{done} bundle {report.bundle_id} in {out} in {time.monotonic() - started:.2f} s: "
        f"copied {report.copied} of {report.objects} objects, {report.bytes_copied} bytes"
    )
    return 0
