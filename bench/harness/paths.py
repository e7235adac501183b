"""Where the benchmarks live and write, and how their commands are shown in the docs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
CACHE = BENCH / ".cache"  # corpora and bundles, keyed by their parameters (not committed)
RESULTS = BENCH / "results"
VENV_BIN = Path(sys.executable).parent


def shown(cmd: list[str]) -> str:
    """`cmd` as the docs show it: paths of this checkout relative to its root."""
    text = " ".join(cmd)
    for path, name in (
        (str(CACHE), "bench/.cache"),
        (str(VENV_BIN), ".venv/bin"),
        (str(ROOT) + "/", ""),
    ):
        text = text.replace(path, name)
    return text


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
