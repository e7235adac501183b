"""The repository explains itself: every file, link and code name its docs and code cite exists.

Docs drift when code moves: these checks read every Markdown document and every Python file
of the repository and resolve what they point at, so a rename that forgets a doc fails here.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT

DOCS = sorted(
    p.relative_to(PROJECT_ROOT)
    for pattern in ("*.md", "docs/*.md", "bench/*.md")
    for p in PROJECT_ROOT.glob(pattern)
)
CODE_DIRS = ("app", "bench", "cluster", "scripts", "tests", "deploy")
# Repository paths as prose writes them: a top-level directory, then path characters.
PATH = re.compile(r"(?<![\w./-])((?:app|bench|cluster|scripts|tests|deploy|docs|data)/[\w./-]*\w)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
DOTTED = re.compile(r"`(app(?:\.\w+)+)`")
# Paths that name what a command creates or a pattern, not a file of the repository.
MADE = re.compile(
    r"^(data/bundles|bench/\.cache|bench/results/\w|tests/.*\*|.*\{|.*<)|\.(?:json|jsonl|raw|svg|png)$"
)


def _code_files() -> list[Path]:
    return sorted(
        p.relative_to(PROJECT_ROOT)
        for d in CODE_DIRS
        for p in (PROJECT_ROOT / d).rglob("*")
        if p.suffix in {".py", ".conf", ".vcl", ".yaml", ".sh", ".toml"} and ".cache" not in p.parts
    )


def _exists(path: str) -> bool:
    if MADE.search(path):
        return True
    target = PROJECT_ROOT / path.rstrip("/.")
    return target.exists()


@pytest.mark.parametrize("doc", DOCS, ids=str)
def test_every_link_and_path_in_a_doc_exists(doc: Path) -> None:
    text = (PROJECT_ROOT / doc).read_text(encoding="utf-8")
    missing = []
    for target in LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (PROJECT_ROOT / doc).parent.joinpath(target).exists():
            missing.append(f"link {target}")
    missing += [f"path {p}" for p in PATH.findall(text) if not _exists(p)]
    assert not missing, f"{doc} cites what the repository does not hold: {sorted(set(missing))}"


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=str)
def test_every_dotted_code_name_in_a_doc_resolves(doc: Path) -> None:
    text = (PROJECT_ROOT / doc).read_text(encoding="utf-8")
    missing = sorted({d for d in DOTTED.findall(text) if not _resolves(d)})
    assert not missing, f"{doc} names code that does not exist: {missing}"


def test_code_cites_only_docs_and_files_that_exist() -> None:
    missing = []
    for path in _code_files():
        text = (PROJECT_ROOT / path).read_text(encoding="utf-8", errors="replace")
        for cited in re.findall(r"(?<![\w./-])(docs/[\w-]+\.md)", text):
            if not (PROJECT_ROOT / cited).exists():
                missing.append(f"{path}: {cited}")
    assert not missing, missing


# Names the docs give of other software (nginx directives, PostgreSQL settings, schemathesis
# checks, Python's profiler, zlib, gunicorn), which the repository's code need not spell.
EXTERNAL = frozenset(
    {
        "cProfile",
        "close_graceful",
        "crc32_combine",
        "ensure_resource_availability",
        "ignored_auth",
        "max_connections",
        "max_prepared_statements",
        "not_a_server_error",
        "proxy_cache",
        "real_ip",
        "ref_f",
        "unsupported_method",
        "use_after_free",
    }
)
# A backticked identifier that can only be code: snake_case or camelCase, maybe called.
CODE_NAME = re.compile(r"`([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\(\))?`")


def test_every_code_name_in_a_doc_is_in_the_code() -> None:
    code = "\n".join(
        (PROJECT_ROOT / p).read_text(encoding="utf-8", errors="replace") for p in _code_files()
    )
    code += (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    missing = []
    for doc in DOCS:
        for name in CODE_NAME.findall((PROJECT_ROOT / doc).read_text(encoding="utf-8")):
            last = name.rsplit(".", 1)[-1]
            looks_like_code = "_" in last or re.search(r"[a-z][A-Z]", last)
            if looks_like_code and last not in EXTERNAL and not re.search(rf"\b{last}\b", code):
                missing.append(f"{doc}: {name}")
    assert not missing, f"docs name code that no longer exists: {sorted(set(missing))}"
