#!/usr/bin/env python3
"""Contract fuzzing against a real gunicorn (tests/reliability/fuzz.py).

`python scripts/fuzz.py` is the bounded run `make test` does; `--long` is `make fuzz`:
many more examples per operation and a longer stateful phase. Exit status 0 when
schemathesis found nothing; its report is printed either way.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.fuzz import LONG, SHORT, run_fuzz
from tests.reliability.harness import Server, build_sample_bundle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="the long run (make fuzz)")
    parser.add_argument("--seed", type=int, help="reproduce an earlier run")
    parser.add_argument("--worker-class", default="sync", choices=["sync", "gthread"])
    args = parser.parse_args()
    limits = LONG if args.long else SHORT
    with tempfile.TemporaryDirectory(prefix="news-fuzz-") as tmp:
        bundle = Path(tmp) / "bundle"
        build_sample_bundle(bundle)
        with Server(Path(tmp) / "server", bundle, worker_class=args.worker_class) as server:
            result = run_fuzz(server, **limits, seed=args.seed)
            print(result.output)
            log = server.log_text()
        print(f"fuzz ({'long' if args.long else 'short'}): {result.summary}")
        if "Traceback" in log:
            print("server log holds a traceback:\n" + log[-5000:])
            return 1
    return 0 if result.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
