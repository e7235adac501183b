"""Named sections of docs/benchmarks.md that separate benchmarks write and keep.

bench/report.py renders the main load benchmark; other benchmarks (publishing, layouts) each
own one section between `<!-- section: NAME -->` and `<!-- end section: NAME -->`, which a
re-render of the main part keeps as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
_SECTION = re.compile(r"<!-- section: (\S+) -->\n.*?<!-- end section: \1 -->\n", re.DOTALL)


def kept(text: str) -> str:
    """Every named section of `text`, in order."""
    return "".join(m.group(0) for m in _SECTION.finditer(text))


def without(text: str) -> str:
    return _SECTION.sub("", text)


def write(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) section `name` of `doc`."""
    block = f"<!-- section: {name} -->\n{body.rstrip()}\n<!-- end section: {name} -->\n"
    text = doc.read_text(encoding="utf-8") if doc.exists() else ""
    pattern = re.compile(
        rf"<!-- section: {re.escape(name)} -->\n.*?<!-- end section: {re.escape(name)} -->\n",
        re.DOTALL,
    )
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block
    doc.write_text(text, encoding="utf-8")
