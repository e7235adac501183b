"""The shape of a generated data file under app/search/data/ (the zh generators share it):
a `#` header, then one tab-separated pair a line, read by app/search/zh_tables.py."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "app" / "search" / "data"


def render_table(header: str, pairs: dict[str, str]) -> str:
    """`header` as `# ` lines, then 'source <TAB> target' lines in the order of `pairs`."""
    head = "".join(f"# {line}\n" for line in header.splitlines())
    return head + "".join(f"{src}\t{dst}\n" for src, dst in pairs.items())


def write(filename: str, text: str) -> None:
    out = DATA / filename
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
