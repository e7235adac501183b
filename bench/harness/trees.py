"""Another revision's source tree beside this one, for before/after runs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.paths import ROOT


@contextmanager
def checkout(rev: str, dest: Path) -> Iterator[Path]:
    """`rev` checked out at `dest` (a detached git worktree), removed on exit."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(dest), rev],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        yield dest
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(dest)], cwd=ROOT)
