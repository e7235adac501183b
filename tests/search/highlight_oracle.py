"""The highlighter as it was before it was made fast, kept as the oracle of
tests/search/test_highlight_oracle.py: every word token of the text analysed and looked up
in order, the whole text folded for CJK runs with a per-character map (the regex for the
Taiwan vocabulary: `_fold_mapped`, which the app keeps for texts whose length NFKC changes),
and each piece of text escaped on its own. The app finds the same marks
from set operations on tokens, chunks of the content, and a numpy fold; its output must
equal this one byte for byte."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from app.search.analyzers import (
    WORD_RE,
    Analyzer,
    normalize,
)
from app.search.highlight import Span, _bounds, _fold_mapped, _merge, _window


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


class Highlighter:
    """The previous matching and escaping."""

    def __init__(self, analyzer: Analyzer, positive_texts: Sequence[str]) -> None:
        self.analyzer = analyzer
        words, runs = analyzer.query_parts(" ".join(positive_texts))
        self.stems = frozenset(analyzer.stem_words(words)) if words else frozenset()
        self.runs = tuple(dict.fromkeys(analyzer.fold_cjk(run) for run in runs))

    def _matches(self, token: str) -> bool:
        words = self.analyzer.token_parts(normalize(token))[0]
        return any(stem in self.stems for stem in self.analyzer.stem_words(words))

    def _word_spans(self, text: str, start: int, stop: int, first_only: bool) -> list[Span]:
        if not self.stems:
            return []
        spans = []
        for match in WORD_RE.finditer(text, start, stop):
            if not self._matches(match.group()):
                continue
            a, b = match.span()
            if (a == start and a > 0 and WORD_RE.match(text, a - 1)) or (
                b == stop and b < len(text) and WORD_RE.match(text, b)
            ):
                continue
            spans.append((a, b))
            if first_only:
                break
        return spans

    def _cjk_spans(self, text: str) -> list[Span]:
        if not self.runs or text.isascii():
            return []
        folded, starts, ends = _fold_mapped(text, normalize(text), self.analyzer)
        spans = []
        for run in self.runs:
            i = folded.find(run)
            while i >= 0:
                j = i + len(run)
                spans.append((starts[i], ends[j - 1]) if starts and ends else (i, j))
                i = folded.find(run, i + 1)
        return spans

    def spans(self, text: str) -> list[Span]:
        return _merge(self._word_spans(text, 0, len(text), False) + self._cjk_spans(text))

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
