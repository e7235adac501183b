"""The highlighter's output as it was before its escaping changed, kept as the oracle of
tests/search/test_highlight_oracle.py: the same marks (app/search/highlight.py finds them),
each piece of text escaped on its own, where the app escapes a whole snippet once with
placeholders for the marks. The new output must equal this one byte for byte."""

from __future__ import annotations

import html
from typing import Any

from app.search import highlight
from app.search.highlight import Span, _bounds, _merge, _window


def _marked(text: str, spans: list[Span], start: int, stop: int) -> str:
    """text[start:stop] HTML-escaped, with each span (inside it) in <mark>."""
    out = []
    last = start
    for a, b in spans:
        out.append(html.escape(text[last:a]))
        out.append("<mark>")
        out.append(html.escape(text[a:b]))
        out.append("</mark>")
        last = b
    out.append(html.escape(text[last:stop]))
    return "".join(out)


class Highlighter(highlight.Highlighter):
    """The app's matching, the previous escaping."""

    def snippet(self, summary: str, content: str) -> str:
        spans = self.spans(summary)
        if spans or not content:
            return _marked(summary, *_window(summary, spans))
        cjk = _merge(self._cjk_spans(content))
        words = self._word_spans(content, 0, len(content), True)
        firsts = cjk[:1] + words
        if not firsts:
            return _marked(summary, *_window(summary, []))
        start, stop = _bounds(content, *min(firsts))
        inside = [s for s in cjk if start <= s[0] and s[1] <= stop]
        spans = _merge(inside + self._word_spans(content, start, stop, False))
        return _marked(content, spans, start, stop)

    def highlight(self, article: dict[str, Any]) -> dict[str, str]:
        title = article["title"]
        return {
            "id": article["id"],
            "title": _marked(title, self.spans(title), 0, len(title)),
            "snippet": self.snippet(article["summary"], article["content"]),
        }
