"""The shape of a generated data module under app/search/ (the zh generators share it)."""

from __future__ import annotations

from pathlib import Path

SEARCH = Path(__file__).resolve().parents[2] / "app" / "search"


def render_module(doc: str, comment: str, name: str, items: list[str]) -> str:
    """A docstring, then `# comment` over `name = (...)`, one string literal per item."""
    body = "\n".join(f'    "{item}"' for item in items)
    return f'"""{doc}\n"""\n\n# {comment}\n{name} = (\n{body}\n)\n'


def write(filename: str, text: str) -> None:
    out = SEARCH / filename
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")
