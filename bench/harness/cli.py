"""The command-line options the benchmark scripts share, and the command line as the docs
cite it."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=(doc or "").splitlines()[0])


def add_corpus(p: argparse.ArgumentParser, per_language: int) -> None:
    p.add_argument("--per-language", type=int, default=per_language)
    p.add_argument("--corpus", type=Path, help="source directory (default: generated)")


def add_rounds(p: argparse.ArgumentParser, duration: int, rounds: int) -> None:
    p.add_argument("--duration", type=int, default=duration)
    p.add_argument("--rounds", type=int, default=rounds)


def add_outputs(
    p: argparse.ArgumentParser, *, json: bool = True, docs: bool = True, render: bool = True
) -> None:
    """--json FILE (the figures), --docs (the script's section of docs/benchmarks.md),
    --render FILE (only that section, from figures written before)."""
    if json:
        p.add_argument("--json", type=Path, help="write the figures here")
    if docs:
        p.add_argument("--docs", action="store_true", help="write docs/benchmarks.md")
    if render:
        p.add_argument("--render", type=Path, help="only write the docs from this JSON")


def invocation(script: str, argv: list[str] | None) -> str:
    """`python bench/<script>` with the arguments it was given, as its docs section cites."""
    return " ".join([f"python bench/{script}", *(argv if argv is not None else sys.argv[1:])])


def emit(
    figures: dict[str, Any],
    args: argparse.Namespace,
    render: Callable[[dict[str, Any], str], None] | None = None,
    command: str = "",
) -> None:
    """Prints the figures, writes them to --json, and with --docs renders the docs section
    (of these options, those the script has)."""
    text = json.dumps(figures, indent=2)
    print(text)
    if getattr(args, "json", None):
        args.json.write_text(text + "\n")
    if render is not None and getattr(args, "docs", False):
        render(figures, command)
