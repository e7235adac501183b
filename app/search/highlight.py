"""Highlights of a search page (docs/api.md §7, docs/search.md "Highlights").

Made for the returned page only: each article's title, and a snippet of at most
SNIPPET_CHARS characters of its summary (or of its content when the summary holds no match)
around the first match, HTML-escaped, with every match wrapped in ``<mark>``/``</mark>``.

What matches is decided by the language's analyser (app/search/analyzers.py), as in the
index, and only for the query's positive terms (an excluded term is in no returned article):

* a word of the text matches when its analysed form (NFKC, case folding, accent folding, the
  language's stemmer) is that of a query word: ``elections`` marks ``Election``;
* CJK text is folded as the index folds it (NFKC, case, Chinese characters and vocabulary to
  one form) with a map back to the original characters, and every occurrence of a query run
  is marked: ``经济`` marks ``經濟``, ``软件`` marks ``軟體``, ``경제`` marks the start of
  ``경제가``.

The text is never re-analysed as a whole: words are looked up once each per request, CJK runs
are found with str.find on the folded text, and a long content is scanned only up to its
first match and then within the snippet's window.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Sequence
from typing import Any

from app.search.analyzers import (
    CJK_RUN_RE,
    WORD_RE,
    ZH_PHRASE_RE,
    ZH_PHRASES,
    Analyzer,
    normalize,
)

SNIPPET_CHARS = 240
# Characters of context kept before the first match when a snippet must be cut.
_LEAD_CHARS = 60
# Where a cut snippet may start after or end before: spaces, and CJK sentence ends.
_BREAK_RE = re.compile("[\\s\u3002\uff01\uff1f]")

Span = tuple[int, int]


class Highlighter:
    """The marks of one query in one language; one per request (it caches word verdicts)."""

    def __init__(self, analyzer: Analyzer, positive_texts: Sequence[str]) -> None:
        self.analyzer = analyzer
        words, runs = analyzer.query_parts(" ".join(positive_texts))
        self.stems = frozenset(analyzer.stem_words(words)) if words else frozenset()
        self.runs = tuple(dict.fromkeys(analyzer.fold_cjk(run) for run in runs))
        self._verdicts: dict[str, bool] = {}

    # -- finding matches ------------------------------------------------------------------

    def _judge(self, token: str) -> bool:
        """Whether a word of the text analyses to a query stem (the word is NFKC'd and case
        folded, then split and accent-folded by the analyser, as the index does)."""
        stems = _token_stems(self.analyzer, token)
        verdict = any(stem in self.stems for stem in stems)
        self._verdicts[token] = verdict
        return verdict

    def _word_spans(self, text: str, start: int, stop: int, first_only: bool) -> list[Span]:
        if not self.stems:
            return []
        spans = []
        verdicts = self._verdicts
        for match in WORD_RE.finditer(text, start, stop):
            verdict = verdicts.get(match.group())
            if verdict is None:
                verdict = self._judge(match.group())
            if not verdict:
                continue
            a, b = match.span()
            # A word cut by the window's edge is not a whole word: leave it unmarked.
            if (a == start and a > 0 and WORD_RE.match(text, a - 1)) or (
                b == stop and b < len(text) and WORD_RE.match(text, b)
            ):
                continue
            spans.append((a, b))
            if first_only:
                break
        return spans

    def _cjk_spans(self, text: str) -> list[Span]:
        """Every occurrence of a query run, as spans of `text`."""
        if not self.runs or text.isascii():
            return []
        folded, starts, ends = _fold(text, self.analyzer)
        spans = []
        for run in self.runs:
            i = folded.find(run)
            while i >= 0:
                j = i + len(run)
                spans.append((starts[i], ends[j - 1]) if starts and ends else (i, j))
                i = folded.find(run, i + 1)
        return spans

    def spans(self, text: str) -> list[Span]:
        """Sorted, disjoint spans of `text` to mark."""
        return _merge(self._word_spans(text, 0, len(text), False) + self._cjk_spans(text))

    # -- output ---------------------------------------------------------------------------

    def snippet(self, summary: str, content: str) -> str:
        spans = self.spans(summary)
        if spans or not content:
            return _marked(summary, *_window(summary, spans))
        cjk = _merge(self._cjk_spans(content))
        words = self._word_spans(content, 0, len(content), True)
        firsts = cjk[:1] + words
        if not firsts:  # matched in the title or tags only
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


# Stems of each text token, per language, shared by all requests of a worker: analysing a
# token (NFKC, case and accent folding, stemming) costs about 2 us and was most of a
# highlight's cost, while the words of news text recur. At most _TOKEN_CACHE tokens a
# language (about 150 bytes each); the table is emptied when full.
_TOKEN_CACHE = 100_000
_TOKEN_STEMS: dict[str, dict[str, tuple[str, ...]]] = {}


def _token_stems(analyzer: Analyzer, token: str) -> tuple[str, ...]:
    table = _TOKEN_STEMS.get(analyzer.language)
    if table is None:
        table = _TOKEN_STEMS.setdefault(analyzer.language, {})
    stems = table.get(token)
    if stems is None:
        words = analyzer.token_parts(normalize(token))[0]
        stems = tuple(analyzer.stem_words(words)) if words else ()
        if len(table) >= _TOKEN_CACHE:
            table.clear()
        table[token] = stems
    return stems


def _fold(text: str, analyzer: Analyzer) -> tuple[str, list[int] | None, list[int] | None]:
    """The text folded as the index folds CJK runs, and for each folded character the span
    of original characters it came from (None, None when the two align one to one)."""
    folded = normalize(text)
    starts: list[int] | None = None
    ends: list[int] | None = None
    if len(folded) != len(text):
        # NFKC or case folding changed lengths somewhere (an ellipsis, a ligature): fold
        # the stretches between CJK runs and the runs separately, keeping the map exact.
        pieces: list[str] = []
        starts, ends = [], []
        cuts = [0]
        for match in CJK_RUN_RE.finditer(text):
            cuts += match.span()
        cuts.append(len(text))
        for lo, hi in itertools.pairwise(cuts):
            piece = normalize(text[lo:hi])
            pieces.append(piece)
            if len(piece) == hi - lo:
                starts += range(lo, hi)
                ends += range(lo + 1, hi + 1)
            else:  # this stretch changed length: its characters one by one
                for i in range(lo, hi):
                    n = len(normalize(text[i]))
                    starts += [i] * n
                    ends += [i + 1] * n
        folded = "".join(pieces)
    if not analyzer.zh_fold:
        return folded, starts, ends
    folded = folded.translate(analyzer.zh_fold)  # one character to one character
    matches = list(ZH_PHRASE_RE.finditer(folded))
    if not matches:
        return folded, starts, ends
    base_starts = starts if starts is not None else list(range(len(folded)))
    base_ends = ends if ends is not None else list(range(1, len(folded) + 1))
    out: list[str] = []
    starts, ends = [], []
    last = 0
    for match in matches:
        a, b = match.span()
        out.append(folded[last:a])
        starts += base_starts[last:a]
        ends += base_ends[last:a]
        replacement = ZH_PHRASES[match.group()]
        out.append(replacement)
        starts += [base_starts[a]] * len(replacement)
        ends += [base_ends[b - 1]] * len(replacement)
        last = b
    out.append(folded[last:])
    starts += base_starts[last:]
    ends += base_ends[last:]
    return "".join(out), starts, ends


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            if b > merged[-1][1]:
                merged[-1] = (merged[-1][0], b)
        else:
            merged.append((a, b))
    return merged


def _bounds(text: str, first: int, first_end: int) -> tuple[int, int]:
    """At most SNIPPET_CHARS characters of `text` holding the match first..first_end,
    starting a little before it, cut at spaces or sentence ends where there are some."""
    if len(text) <= SNIPPET_CHARS:
        return 0, len(text)
    start = max(0, min(first - _LEAD_CHARS, len(text) - SNIPPET_CHARS))
    if start > 0 and not _BREAK_RE.match(text, start - 1):
        cut = _BREAK_RE.search(text, start, first)
        if cut is not None:
            start = cut.end()
    stop = min(len(text), start + SNIPPET_CHARS)
    if stop < len(text) and not _BREAK_RE.match(text, stop):
        breaks = list(_BREAK_RE.finditer(text, first_end, stop))
        if breaks:  # end after a CJK full stop, before a space
            last = breaks[-1]
            stop = last.start() if last.group().isspace() else last.end()
    return start, stop


def _window(text: str, spans: list[Span]) -> tuple[list[Span], int, int]:
    start, stop = _bounds(text, *(spans[0] if spans else (0, 0)))
    return [s for s in spans if start <= s[0] and s[1] <= stop], start, stop


def _marked(text: str, spans: list[Span], start: int, stop: int) -> str:
    """text[start:stop] HTML-escaped, with each span (inside it) in <mark>."""
    piece = text[start:stop]
    if not spans:
        return html.escape(piece)
    if _OPEN in piece or _CLOSE in piece:  # the placeholders are the text's own: piece by piece
        parts: list[str] = []
        last = start
        for a, b in spans:
            parts += (html.escape(text[last:a]), "<mark>", html.escape(text[a:b]), "</mark>")
            last = b
        parts.append(html.escape(text[last:stop]))
        return "".join(parts)
    # Placeholders for the marks, then one escape of the whole (escaping does not touch them).
    out: list[str] = []
    last = start
    for a, b in spans:
        out += (text[last:a], _OPEN, text[a:b], _CLOSE)
        last = b
    out.append(text[last:stop])
    return html.escape("".join(out)).replace(_OPEN, "<mark>").replace(_CLOSE, "</mark>")


_OPEN, _CLOSE = "\x00", "\x01"
