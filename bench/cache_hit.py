"""What a hit costs in the bounded cache the server keeps answers in (app/bounded.py), against
a plain dict (the response cache's earlier first-in-first-out store) and cachetools'
LRUCache (with the lock a threaded worker needs, and without).

    python bench/cache_hit.py [--keys 2000] [--repeat 7]

cachetools is not a dependency of the project: install it beside the run to compare
(`pip install --target DIR cachetools` and `PYTHONPATH=DIR`); without it, its rows are left
out.
"""

from __future__ import annotations

import argparse
import sys
import threading
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.bounded import Bounded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    keys = [("GET", f"/api/v1/en/articles/{i}", "", None) for i in range(args.keys)]
    body = b"x" * 1000

    plain = dict.fromkeys(keys, body)
    block: Bounded[tuple[str, str, str, None], bytes] = Bounded(1 << 40, 1 << 30, 1)
    for key in keys:
        block.put(key, body, len(body))

    def dict_hits() -> None:
        get = plain.get
        for key in keys:
            get(key)

    def bounded_hits() -> None:
        get = block.get
        for key in keys:
            get(key)

    cases: list[tuple[str, Callable[[], None]]] = [
        ("dict.get (first in, first out)", dict_hits),
        ("app.bounded.Bounded.get (LRU)", bounded_hits),
    ]
    try:
        import cachetools
    except ImportError:
        print("(cachetools not installed: its rows are left out)")
    else:
        lru: cachetools.LRUCache[tuple[str, str, str, None], bytes] = cachetools.LRUCache(
            maxsize=1 << 40, getsizeof=len
        )
        for key in keys:
            lru[key] = body
        lock = threading.Lock()

        def cachetools_hits() -> None:
            get = lru.get
            for key in keys:
                with lock:
                    get(key)

        def cachetools_unlocked() -> None:
            get = lru.get
            for key in keys:
                get(key)

        version = cachetools.__version__
        cases += [
            (f"cachetools {version} LRUCache.get + lock", cachetools_hits),
            (f"cachetools {version} LRUCache.get, no lock", cachetools_unlocked),
        ]
    for name, run in cases:
        best = min(timeit.repeat(run, number=200, repeat=args.repeat)) / (200 * len(keys))
        print(f"{name:45s} {best * 1e9:7.1f} ns a hit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
