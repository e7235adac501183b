"""`python scripts/install_bundle.py --from SHIPPED_DIR --to BUNDLE_DIR`.

For instances that receive a bundle built elsewhere (CI): copies it beside the served
directory, verifies every file against its manifest, then swaps it in atomically with
the same exchange the builder uses. A bundle that fails verification is never swapped in.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from app.build.writer import OutputError, check_replaceable, output_lock, swap_into_place
from app.bundle.reader import Bundle, BundleError


def install(shipped: Path, out: Path) -> str:
    """Verify and swap in `shipped`; returns its bundle id. `out` is untouched on error."""
    Bundle.load(shipped, verify="sha256")  # fail fast, before copying anything
    with output_lock(out):
        check_replaceable(out)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
        try:
            copy = staging / "bundle"
            shutil.copytree(shipped, copy)
            bundle_id = Bundle.load(copy, verify="sha256").bundle_id  # the copy, re-verified
            swap_into_place(copy, out)
            return bundle_id
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="install_bundle.py",
        description="Verify a shipped bundle and swap it into the served directory atomically.",
    )
    parser.add_argument("--from", dest="shipped", required=True, type=Path)
    parser.add_argument("--to", dest="out", required=True, type=Path)
    args = parser.parse_args(argv)
    try:
        bundle_id = install(args.shipped, args.out)
    except (BundleError, OutputError, OSError) as exc:
        print(f"install failed: {exc}\n{args.out} was left unchanged.", file=sys.stderr)
        return 1
    print(f"installed bundle {bundle_id} in {args.out}")
    return 0
