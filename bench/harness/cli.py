"""The command-line options the benchmark scripts share, and the command line as the docs
cite it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=(doc or "").splitlines()[0])


def add_corpus(p: argparse.ArgumentParser, per_language: int) -> None:
    p.add_argument("--per-language", type=int, default=per_language)
    p.add_argument("--corpus", type=Path)


def add_rounds(p: argparse.ArgumentParser, duration: int, rounds: int) -> None:
    p.add_argument("--duration", type=int, default=duration)
    p.add_argument("--rounds", type=int, default=rounds)


def add_outputs(p: argparse.ArgumentParser, *, json: bool = True, render: bool = True) -> None:
    if json:
        p.add_argument("--json", type=Path)
    p.add_argument("--docs", action="store_true", help="write docs/benchmarks.md")
    if render:
        p.add_argument("--render", type=Path, help="only write the docs from this JSON")


def invocation(script: str, argv: list[str] | None) -> str:
    """`python bench/<script>` with the arguments it was given, as its docs section cites."""
    return " ".join([f"python bench/{script}", *(argv if argv is not None else sys.argv[1:])])
