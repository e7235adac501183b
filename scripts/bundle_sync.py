#!/usr/bin/env python3
"""Keep a served bundle directory in step with a bundle origin (Kubernetes pods' bundle
delivery; docs/operations.md, "Bundles on Kubernetes").

The origin is a directory where the publishing pipeline builds or copies the current
bundle (a read-only shared volume in a pod). Whenever the origin's `manifest.json` changes,
this runs `scripts/install_bundle.py ORIGIN DEST`, which verifies the bundle, copies what
DEST lacks and switches atomically; the workers pick the new bundle up by themselves.

  bundle_sync.py --origin /origin --dest /bundles/served --once     # init container
  bundle_sync.py --origin /origin --dest /bundles/served            # sidecar: poll forever

A refused bundle is logged and retried only when the origin changes again (retrying the
same bytes cannot succeed); the served bundle is never touched by a failed install.

Each poll also stats DEST's objects: one that is missing, or is no longer the file that was
hashed when it arrived (truncated, rewritten, replaced on disk), makes it run the install
again, which copies those objects back from the origin (docs/operations.md, "Damaged bundle
files"). The same damage is retried only once it changes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from app.bundle.install import damaged_objects

INSTALL = Path(__file__).resolve().parent / "install_bundle.py"

Identity = tuple[int, int, int, int]


def manifest_identity(origin: Path) -> Identity | None:
    """What changes whenever a new bundle lands in the origin (it replaces manifest.json)."""
    try:
        st = os.stat(origin / "manifest.json")
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def install(origin: Path, dest: Path) -> bool:
    result = subprocess.run(
        [sys.executable, str(INSTALL), str(origin), str(dest)],
        capture_output=True,
        text=True,
        check=False,
    )
    stream = sys.stdout if result.returncode == 0 else sys.stderr
    print((result.stdout + result.stderr).strip(), file=stream, flush=True)
    return result.returncode == 0


def sync(origin: Path, dest: Path, interval: float, once: bool, max_polls: int | None) -> int:
    installed: Identity | None = None
    repaired: list[str] = []  # the damage the last install was run for
    polls = 0
    while True:
        identity = manifest_identity(origin)
        damage = damaged_objects(dest) if installed is not None else []
        if identity is None:
            print(f"bundle_sync: no bundle in {origin} yet", file=sys.stderr, flush=True)
        elif identity != installed or (damage and damage != repaired):
            if identity == installed:
                print(
                    f"bundle_sync: {len(damage)} damaged object(s) in {dest}, e.g. "
                    f"objects/{damage[0]}: copying them again from {origin}",
                    file=sys.stderr,
                    flush=True,
                )
            ok = install(origin, dest)
            installed = identity  # success or refusal: wait for the origin to change
            repaired = damage
            if once:
                return 0 if ok else 1
        if once:
            return 1  # nothing to install: the pod must not start without a bundle
        polls += 1
        if max_polls is not None and polls >= max_polls:
            return 0
        time.sleep(interval)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bundle_sync.py", description=__doc__.split("\n")[0])
    parser.add_argument("--origin", type=Path, required=True, help="where the current bundle is")
    parser.add_argument("--dest", type=Path, required=True, help="the served bundle directory")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between checks")
    parser.add_argument("--once", action="store_true", help="install once and exit")
    parser.add_argument("--max-polls", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    return sync(args.origin, args.dest, args.interval, args.once, args.max_polls)


if __name__ == "__main__":
    sys.exit(main())
