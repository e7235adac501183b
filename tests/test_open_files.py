"""Open files: a bundle holds one descriptor per mapped object (Python's mmap keeps one), so
the store raises the soft limit, a dropped store gives its descriptors back, and a limit too
low for a bundle is a clear BundleError (docs/operations.md, "Open files")."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from app.bundle.store import BundleStore

REPO = Path(__file__).resolve().parent.parent


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_a_dropped_store_closes_its_mappings(bundle: tuple[Path, str]) -> None:
    gc.collect()
    before = _open_descriptors()
    store = BundleStore(bundle[0], check_interval=0.01)
    store.current()  # starts the watcher thread
    assert _open_descriptors() > before + 100  # every object of every language is mapped
    del store
    gc.collect()
    assert _open_descriptors() <= before + 1  # the watcher's wake-up may still hold one


def test_the_store_raises_the_soft_limit_to_the_hard_one(bundle: tuple[Path, str]) -> None:
    result = _run(
        f"""
        import resource
        from pathlib import Path
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        from app.bundle.store import BundleStore
        BundleStore(Path({str(bundle[0])!r}))
        print(resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_a_limit_too_low_for_the_bundle_is_a_clear_error(bundle: tuple[Path, str]) -> None:
    result = _run(
        f"""
        import resource
        from pathlib import Path
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        from app.bundle.reader import Bundle, BundleError
        try:
            Bundle.load(Path({str(bundle[0])!r}))
        except BundleError as exc:
            print(exc)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "Too many open files" in result.stdout
    assert "raise the open-file limit" in result.stdout
