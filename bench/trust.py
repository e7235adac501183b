"""Corrections and retractions end to end at archive scale (docs/api.md §11).

    python bench/trust.py --per-language 100000 [--corpus DIR] [--work DIR] [--json OUT]

With the real commands, as bench/publish.py measures a publish: a from-scratch build of the
corpus, installed and served by gunicorn; then, three times each, an edit of one source line
published end to end (incremental build, install_bundle.py into the served directory, until
the running server answers with it ten times in a row):

* a correction: the article gains a `corrections` entry, until GET shows it;
* a retraction: the article gains `retracted`, until GET answers 410 with its notice;
* a withdrawal: `retracted` is taken back, until GET answers 200 again.

The edited file is rewritten whole (a new file: the corpus is hard-linked), as an editor
would; the builder hashes its lines again and parses only the changed one.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from publish import PY, full_build, get, prepare, run_measured, start_server, wait_for


def main(argv: list[str] | None = None) -> int:
    parser = harness.cli.parser(__doc__)
    harness.cli.add_corpus(parser, per_language=100_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/news-bench-trust"))
    harness.cli.add_outputs(parser, docs=False, render=False)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    work: Path = args.work
    src, built, served = prepare(work, args.per_language, args.corpus)
    figures: dict[str, Any] = {"per_language": args.per_language, "machine_cpus": os.cpu_count()}
    figures["full_build"] = full_build(src, built, served)
    port = 18124
    server = start_server(served, work, port)
    try:
        harness.wait_ready(port, server, "/ready", timeout=120)
        lines = (src / "en.jsonl").read_bytes().split(b"\n")
        record = orjson.loads(lines[0])
        path = f"/api/v1/en/articles/{record['id']}"
        notes: list[dict[str, str]] = []

        def publish(edited: dict[str, Any], served_when: Any) -> dict[str, Any]:
            (src / "en.jsonl").unlink()  # a hard link to the corpus: write a new file
            (src / "en.jsonl").write_bytes(b"\n".join([orjson.dumps(edited), *lines[1:]]))
            started = time.perf_counter()
            b_seconds, _, b_out = run_measured(
                [PY, "scripts/build_bundles.py", "--src", str(src), "--out", str(built)]
            )
            i_seconds, _, i_out = run_measured(
                [PY, "scripts/install_bundle.py", str(built), str(served)], sample=False
            )
            wait_for(lambda: all(served_when(*get(port, path)) for _ in range(10)))
            purge = re.search(r"CDN: purge (\d+)", b_out)
            return {
                "end_to_end_seconds": round(time.perf_counter() - started, 2),
                "build_seconds": round(b_seconds, 2),
                "install_seconds": round(i_seconds, 2),
                "bytes_shipped": int(re.search(r"objects, (\d+) bytes", i_out).group(1)),  # type: ignore[union-attr]
                "purge_keys": int(purge.group(1)) if purge else None,
            }

        def corrected(status: int, body: bytes) -> bool:
            return status == 200 and len(orjson.loads(body)["corrections"]) == len(notes)

        def retracted(reason: str) -> Any:
            return lambda status, body: status == 410 and reason.encode() in body

        def restored(status: int, _body: bytes) -> bool:
            return status == 200

        for kind in ("correction", "retraction", "withdrawal"):
            figures[kind] = []
            for run in range(args.runs):
                if kind == "correction":
                    at = f"2030-01-0{run + 1}T00:00:00Z"  # after any generated published_at
                    notes.append({"at": at, "text": f"Correction {run + 1}."})
                    figures[kind].append(publish({**record, "corrections": notes}, corrected))
                    continue
                # Each measured run starts from the other state (set up unmeasured).
                reason = f"Reason {kind} {run}."
                notice = {"retracted": {"at": f"2030-02-0{run + 1}T00:00:00Z", "reason": reason}}
                if kind == "retraction":
                    if run:
                        publish({**record, "corrections": notes}, restored)
                    edited = {**record, "corrections": notes, **notice}
                    figures[kind].append(publish(edited, retracted(reason)))
                else:
                    if run:
                        publish({**record, "corrections": notes, **notice}, retracted(reason))
                    figures[kind].append(publish({**record, "corrections": notes}, restored))
            print(json.dumps({kind: figures[kind]}), file=sys.stderr)
    finally:
        harness.stop(server)
    harness.cli.emit(figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
