"""The benchmarks' inputs: the generated corpus (bench/gen_corpus.py) with its URL lists,
and bundles built from it, cached under bench/.cache by their parameters."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gen_corpus

from harness.paths import CACHE, ROOT, VENV_BIN, log, shown

ENDPOINTS = ("list", "latest", "get", "search", "categories")
SCRIPT_FAMILIES = {
    "latin": ("en", "fr", "de", "es", "it"),
    "cjk": ("zh_cn", "zh_tw", "ja"),
    "hangul": ("ko",),
}


def corpus(per_language: int, seed: int = 1) -> tuple[Path, dict[str, Any]]:
    """The corpus directory (generated on first use, keyed by the generator's source too)
    and its statistics."""
    digest = hashlib.sha256(Path(gen_corpus.__file__).read_bytes()).hexdigest()[:10]
    out = CACHE / f"corpus-n{per_language}-s{seed}-{digest}"
    stats_file = out / "stats.json"
    if not stats_file.exists():
        log(f"generating corpus {out.name}")
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=CACHE, prefix="corpus-tmp-"))
        started = time.perf_counter()
        stats: dict[str, Any] = dict(gen_corpus.generate(tmp, per_language, seed))
        stats["seconds"] = round(time.perf_counter() - started, 2)
        (tmp / "stats.json").write_text(json.dumps(stats))
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    return out, json.loads(stats_file.read_text())


def generated(corpus: Path | None, per_language: int, scratch: Path) -> Path:
    """The corpus directory given (--corpus), or one generated into `scratch`."""
    corpus = corpus or scratch / "corpus"
    if not (corpus / "urls" / "mix.txt").is_file():
        gen_corpus.generate(corpus, per_language, 1)
    return corpus


def sources(corpus: Path, dest: Path) -> Path:
    """`dest`, a new directory holding the corpus's source files (linked, not copied) and
    nothing else: what the builder reads."""
    dest.mkdir()
    for path in corpus.glob("*.jsonl"):
        (dest / path.name).symlink_to(path.resolve())
    return dest


def cached_bundle(src: Path) -> Path:
    """Where `build_bundle` puts the bundle of the cached corpus `src`."""
    return CACHE / f"bundle-{src.name.removeprefix('corpus-')}"


def build_bundle(src: Path) -> tuple[Path, dict[str, Any]]:
    """Builds the bundle of the cached corpus `src` with this checkout's builder (timed)."""
    out = cached_bundle(src)
    cmd = [sys.executable, "scripts/build_bundles.py", "--src", str(src), "--out", str(out)]
    log("building bundle: " + shown(cmd))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak = after.ru_maxrss
    files = [p for p in out.rglob("*") if p.is_file()]
    return out, {
        "seconds": round(seconds, 2),
        # CPU time too: wall time alone misleads when the machine is not quiet.
        "cpu_seconds": round(
            after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2
        ),
        "bytes": sum(p.stat().st_size for p in files),
        "files": len(files),
        # ru_maxrss of children is the largest child so far; only meaningful if it grew.
        "peak_rss_mb": round(peak / 1024, 1) if peak > before.ru_maxrss else None,
        "command": shown(cmd),
    }


def build(code: Path, src: Path, out: Path, *extra: str) -> None:
    """Builds `src` into `out` with the builder of the source tree `code` (this checkout or
    another revision's), quietly; `extra` are builder options (--full, --no-merge)."""
    subprocess.run(
        [
            str(VENV_BIN / "python"),
            "scripts/build_bundles.py",
            "--src",
            str(src),
            "--out",
            str(out),
            *extra,
        ],
        cwd=code,
        # The script's own directory is first on sys.path, not the code's root, and the
        # venv's editable install would otherwise import this checkout's builder.
        env={**os.environ, "PYTHONPATH": str(code)},
        check=True,
        stdout=subprocess.DEVNULL,
    )


def url_files(src: Path) -> dict[str, Path]:
    """The corpus's URL lists, one per endpoint and the mix (bench/gen_corpus.py)."""
    return {name: src / "urls" / f"{name}.txt" for name in (*ENDPOINTS, "mix")}


def all_urls(files: dict[str, Path]) -> list[str]:
    seen: dict[str, None] = {}
    for path in files.values():
        seen.update(dict.fromkeys(filter(None, path.read_text(encoding="utf-8").splitlines())))
    return list(seen)


def script_family(language: str) -> str:
    return next(f for f, langs in SCRIPT_FAMILIES.items() if language in langs)
