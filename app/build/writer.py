"""Guards for writing a bundle directory: one writer at a time, and never over a directory
that is not a bundle. (How a bundle is written: app/build/cli.py and app/bundle/objects.py.)"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator
from pathlib import Path

from app.bundle import format as fmt


class OutputError(Exception):
    """The output directory cannot be written or replaced."""


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
        ours = {fmt.OBJECTS, fmt.VERIFIED, "build-state.json"}
        if any(p.name not in ours and not p.name.startswith(".tmp-") for p in out_dir.iterdir()):
            raise OutputError(f"{out_dir} is not empty and holds no bundle; refusing to replace it")
