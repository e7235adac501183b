"""Peak memory and time of one segment merge, the largest process of a from-scratch build
(docs/benchmarks.md, "Build memory").

`compile` plans SRC from scratch and compiles the chunks of LANGUAGE's first unit (a run of
chunks a full build merges into one segment: up to app.builder.policy.MAX_DOCS articles) into
WORK's object store, as the builder does, unmerged. `merge` then merges them in this process
alone and prints its peak RSS (mapped input pages included) and wall time, so one merge can be
measured, profiled and compared across changes without rebuilding:

    python bench/merge_memory.py compile --src DIR --work DIR --language ja
    python bench/merge_memory.py merge --work DIR --language ja
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import time
from pathlib import Path

import numpy as np
import orjson

from app.builder import builder, shards
from app.builder.merge import merge_segments
from app.bundle.manifest import segment_entry
from app.bundle.objects import ObjectStore
from app.public_urls import PublicUrls


def compile_unit(src: Path, work: Path, language: str) -> None:
    ObjectStore(work).create()
    with builder._Workers(os.cpu_count() or 1) as executor:
        plan = shards.make_plan(src, PublicUrls.from_env(), executor)
        unit = next(u for u in plan.units() if u.language == language)
        futures = [
            executor.submit(
                builder._compile_job,
                str(work),
                language,
                plan.articles(language, start, end),
                plan.urls,
                plan.pair_words[language],
                work=end - start,
            )
            for start, end in unit.chunks
        ]
        descs = [future.result()[0] for future in futures]
    (work / f"{language}.chunks.json").write_bytes(orjson.dumps([d.to_json() for d in descs]))
    print(f"{language}: {unit.docs} articles in {len(descs)} chunks compiled into {work}")


def merge_unit(work: Path, language: str) -> None:
    raw = orjson.loads((work / f"{language}.chunks.json").read_bytes())
    descs = [segment_entry(d, f"chunk {n}: ") for n, d in enumerate(raw)]
    inputs = [(desc, np.zeros(0, dtype=np.int64)) for desc in descs]
    start = time.perf_counter()
    desc, _ = merge_segments(ObjectStore(work), language, inputs)
    seconds = time.perf_counter() - start
    digest = hashlib.sha256(orjson.dumps(desc.to_json(), option=orjson.OPT_SORT_KEYS)).hexdigest()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{language}: merged {len(descs)} segments, {desc.docs} articles, "
        f"in {seconds:.1f} s, peak RSS {peak_mb:.0f} MB, "
        f"segment {digest[:16]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("compile", "merge"))
    parser.add_argument("--src", type=Path)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--language", default="ja")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "compile":
        if args.src is None:
            parser.error("compile needs --src")
        compile_unit(args.src, args.work, args.language)
    else:
        merge_unit(args.work, args.language)


if __name__ == "__main__":
    main()
