"""How a new generation becomes the served one: the commit protocol of a bundle directory,
shared by the builder (app.builder.builder) and the installer (app.bundle.install).

One writer at a time holds `output_lock`. It writes every object the new manifest names
(each fsynced and renamed into the store: app.bundle.objects), then `commit`:

1. records the objects it hashed in verified.json, dropping what no kept manifest names;
2. writes the new manifest under a temporary name, and lets the caller check it (the
   installer loads it as a worker would);
3. keeps the served manifest as `manifest.previous.json` (rollback);
4. renames the new manifest over `manifest.json`: the commit point, atomic, the directory
   fsynced after;
5. runs what the caller does after the switch (the builder's build state), then deletes
   the objects neither manifest names.

A writer killed at any step leaves a servable bundle: before step 4 the old generation is
whole, and its objects are deleted only after the new one is committed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from app.bundle import format as fmt
from app.bundle.manifest import Manifest
from app.bundle.objects import ObjectStore, fsync_dir, write_atomically

CANDIDATE = ".tmp-manifest.candidate.json"


class OutputError(Exception):
    """The bundle directory cannot be written or replaced."""


def report_unchanged(action: str, out_dir: Path, reason: str, details: Iterable[str] = ()) -> int:
    """What the builder's and the installer's command lines say when `action` stopped before
    the commit point (step 4): the directory still serves its previous generation. Returns
    the exit status, 1."""
    lines = [f"{action} failed: {reason}", *(f"  {detail}" for detail in details)]
    print("\n".join([*lines, f"{out_dir} was left unchanged."]), file=sys.stderr)
    return 1


def commit(
    out: Path,
    store: ObjectStore,
    data: bytes,
    manifest: Manifest,
    *,
    previous: Manifest | None,
    hashed: Iterable[str],
    keep: Iterable[str] = (),
    check: Callable[[str], object] | None = None,
    after_switch: Callable[[], None] | None = None,
) -> None:
    """Serve `manifest` (whose bytes are `data`) from `out`. `previous`: the manifest served
    now, kept for rollback with its objects (None: nothing worth keeping). `hashed`: the
    objects whose bytes the caller hashed since they were written here. `keep`: other
    objects to keep (the builder's line records). `check(name)` is given the candidate
    manifest's file name and raises to refuse it."""
    kept = set(manifest.objects).union(keep)
    if previous is not None:
        kept.update(previous.objects)
    store.record_verified(hashed, kept)
    switch(out, data, check=check, keep_previous=previous is not None)
    if after_switch is not None:
        after_switch()
    store.collect_garbage(kept)


def switch(
    out: Path,
    data: bytes,
    *,
    check: Callable[[str], object] | None = None,
    keep_previous: bool = True,
) -> None:
    """Replace `out`'s manifest.json with `data` atomically (steps 2 to 4 of `commit`); the
    one it replaces becomes manifest.previous.json when `keep_previous`."""
    candidate = out / CANDIDATE
    write_atomically(candidate, data)
    try:
        if check is not None:
            check(CANDIDATE)
    except BaseException:
        candidate.unlink(missing_ok=True)
        raise
    if keep_previous:
        write_atomically(out / fmt.PREVIOUS_MANIFEST, (out / fmt.MANIFEST).read_bytes())
    os.rename(candidate, out / fmt.MANIFEST)  # the commit point
    fsync_dir(out)


@contextlib.contextmanager
def output_lock(out_dir: Path, wait: float = 0.0) -> Iterator[None]:
    """One build or install at a time per output directory (a lock file beside it); waits up
    to `wait` seconds for the one in progress, so concurrent publishes run one after another."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    lock_path = out_dir.parent / f".{out_dir.name}.lock"
    deadline = time.monotonic() + wait
    with open(lock_path, "a") as fh:
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OutputError(
                        f"another build is writing {out_dir} (lock {lock_path})"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_replaceable(out_dir: Path) -> None:
    """Refuse to replace anything that is not a bundle (a typo must not delete a tree)."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise OutputError(f"{out_dir} exists and is not a directory")
    if out_dir.is_dir() and not (out_dir / fmt.MANIFEST).is_file():
        # A first build killed before its commit leaves only the bundle's own files.
        ours = {fmt.OBJECTS, fmt.VERIFIED, fmt.BUILD_STATE}
        if any(p.name not in ours and not p.name.startswith(".tmp-") for p in out_dir.iterdir()):
            raise OutputError(f"{out_dir} is not empty and holds no bundle; refusing to replace it")
