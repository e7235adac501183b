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

The text is never re-analysed as a whole. Words: the text's distinct pieces (split at ASCII
separators in bytes, as the indexer splits; ko/ja/zh: its WORD_RE tokens) are matched against
a per-worker vocabulary (piece -> tokens, stem -> pieces, token -> stems) with set
operations, and only the hits are located, with str.find; a long content is searched in
growing chunks up to its first match, then within the snippet's window. CJK: the text is
folded once (Chinese characters through a numpy code-point table, Taiwan vocabulary looked
for only where two characters start a phrase), and each query run is found with str.find on
the folded text.
"""

from __future__ import annotations

import bisect
import html
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from app.search.analyzers import (
    CJK_CLASS,
    CJK_RUN_RE,
    UNIGRAM_SHIFT,
    WORD_RE,
    Analyzer,
    normalize,
)
from app.search.zh_fold import (
    CHAR_TABLE,
    ZH_PHRASE_RE,
    ZH_PHRASES,
    fold_chars,
    fold_chars_and_codes,
)

SNIPPET_CHARS = 240
# Characters of context kept before the first match when a snippet must be cut.
_LEAD_CHARS = 60
# Where a cut snippet may start after or end before: spaces, and CJK sentence ends.
_BREAK_RE = re.compile("[\\s\u3002\uff01\uff1f]")
# CJK characters, which WORD_RE's class leaves out (they are runs): _is_word_char, which
# tells whether a token found by str.find has a word character beside it.
_CJK_CHAR_RE = re.compile(f"[{CJK_CLASS}]")
# The content is searched for its first word match in chunks of this many characters and
# more (doubling), cut at a break: most first matches are near the start.
_FIRST_CHUNK = 120

Span = tuple[int, int]


class Highlighter:
    """The marks of one query in one language; one per request."""

    def __init__(self, analyzer: Analyzer, positive_texts: Sequence[str]) -> None:
        self.analyzer = analyzer
        words, runs = analyzer.query_parts(" ".join(positive_texts))
        self.stems = frozenset(analyzer.stem_words(words)) if words else frozenset()
        self.runs = tuple(dict.fromkeys(analyzer.fold_cjk(run) for run in runs))
        # Held for the whole request: a full table is replaced, never emptied under a reader.
        self._vocabulary = _vocabulary(analyzer)

    # -- finding matches ------------------------------------------------------------------

    def _hits(self, text: str, start: int, stop: int) -> set[str]:
        """The distinct word tokens of text[start:stop] (a token cut by an edge included)
        that analyse to a query stem."""
        vocabulary = self._vocabulary
        if self.analyzer.cjk:
            tokens = set(WORD_RE.findall(text, start, stop))
        else:  # split at ASCII separators in bytes, as the index does: faster than WORD_RE
            raws = set(Analyzer.raw_tokens(text[start:stop]))
            for raw in raws.difference(vocabulary.raws):  # new to the worker
                vocabulary.learn_raw(self.analyzer, raw)
            tokens = set()
            for stem in self.stems:
                for raw in raws.intersection(vocabulary.holders.get(stem, ())):
                    tokens.update(vocabulary.raws[raw])
        stems = self.stems
        return {t for t in tokens if not stems.isdisjoint(vocabulary.learn(self.analyzer, t))}

    def _word_spans(self, text: str, start: int, stop: int, first: bool = False) -> list[Span]:
        """Spans of the whole words of `text` inside start..stop that match, in text order
        (a word cut by the window's edge is not a whole word: it is left unmarked); with
        `first`, the first of them only."""
        if not self.stems:
            return []
        spans = []
        end = len(text)
        for token in self._hits(text, start, stop):
            n = len(token)
            i = text.find(token, start, stop)
            while i >= 0:
                j = i + n
                if (i == 0 or not _is_word_char(text[i - 1])) and (
                    j == end or not _is_word_char(text[j])
                ):
                    spans.append((i, j))
                    if first:
                        break
                i = text.find(token, i + 1, stop)
        if first:
            return [min(spans)] if spans else []
        spans.sort()
        return spans

    def _first_word(self, text: str) -> list[Span]:
        """The first matching word of `text` (at most one span), found chunk by chunk; each
        chunk ends before a break, which no word crosses."""
        if not self.stems:
            return []
        start, size = 0, _FIRST_CHUNK
        while start < len(text):
            cut = _BREAK_RE.search(text, start + size) if start + size < len(text) else None
            stop = cut.start() if cut is not None else len(text)
            spans = self._word_spans(text, start, stop, True)
            if spans:
                return spans
            start, size = stop, size * 2
        return []

    def _cjk_spans(self, text: str) -> list[Span]:
        """Every occurrence of a query run, as spans of `text`."""
        if not self.runs or text.isascii():
            return []
        folded, origin = _fold(text, self.analyzer)
        spans = []
        for run in self.runs:
            i = folded.find(run)
            while i >= 0:
                spans.append(origin(i, i + len(run)))
                i = folded.find(run, i + 1)
        return spans

    def spans(self, text: str) -> list[Span]:
        """Sorted, disjoint spans of `text` to mark."""
        return _merge(self._word_spans(text, 0, len(text)) + self._cjk_spans(text))

    # -- output ---------------------------------------------------------------------------

    def snippet(self, summary: str, content: str) -> str:
        spans = self.spans(summary)
        if spans or not content:
            return _marked(summary, *_window(summary, spans))
        cjk = _merge(self._cjk_spans(content))
        firsts = cjk[:1] + self._first_word(content)
        if not firsts:  # matched in the title or tags only
            return _marked(summary, *_window(summary, []))
        start, stop = _bounds(content, *min(firsts))
        inside = [s for s in cjk if start <= s[0] and s[1] <= stop]
        spans = _merge(inside + self._word_spans(content, start, stop))
        return _marked(content, spans, start, stop)

    def highlight(self, article: dict[str, Any]) -> dict[str, str]:
        title = article["title"]
        return {
            "id": article["id"],
            "title": _marked(title, self.spans(title), 0, len(title)),
            "snippet": self.snippet(article["summary"], article["content"]),
        }


# What the worker has learnt of each language's text, shared by all its requests: analysing a
# token (NFKC, case and accent folding, stemming) costs about 2 us, and walking a text's
# tokens one by one in Python was most of a highlight's cost, while the words of news text
# recur. Token -> stems; for en/fr/de/es/it also piece -> tokens and stem -> pieces, so a
# text's pieces are matched against a query with set operations. At most _TOKEN_CACHE
# entries (tokens plus pieces) a language, ~23 MB (tracemalloc, 50,000 random ASCII words);
# a full vocabulary is replaced by an empty one.
_TOKEN_CACHE = 100_000


class _Vocabulary:
    __slots__ = ("holders", "raws", "stems")

    def __init__(self) -> None:
        self.stems: dict[str, tuple[str, ...]] = {}  # word token -> its stems
        # en/fr/de/es/it: a piece of text between ASCII separators (UTF-8 bytes) -> its word
        # tokens, and stem -> the pieces holding a token of that stem (a tuple while short).
        self.raws: dict[bytes, tuple[str, ...]] = {}
        self.holders: dict[str, tuple[bytes, ...] | set[bytes]] = {}

    def __len__(self) -> int:
        return len(self.stems) + len(self.raws)

    def learn(self, analyzer: Analyzer, token: str) -> tuple[str, ...]:
        stems = self.stems.get(token)
        if stems is None:
            words = analyzer.token_parts(normalize(token))[0]
            stems = self.stems[token] = tuple(analyzer.stem_words(words)) if words else ()
        return stems

    def learn_raw(self, analyzer: Analyzer, raw: bytes) -> None:
        text = raw.decode("utf-8")
        tokens = (text,) if text.isascii() else tuple(WORD_RE.findall(text))
        self.raws[raw] = tokens
        for token in tokens:
            for stem in self.learn(analyzer, token):
                holders = self.holders.get(stem, ())
                if isinstance(holders, set):
                    holders.add(raw)
                elif raw not in holders:  # replaced whole: readers see one or the other
                    grown = (*holders, raw)
                    self.holders[stem] = grown if len(grown) <= 8 else set(grown)


_VOCABULARIES: dict[str, _Vocabulary] = {}


def _vocabulary(analyzer: Analyzer) -> _Vocabulary:
    vocabulary = _VOCABULARIES.get(analyzer.language)
    if vocabulary is None or len(vocabulary) >= _TOKEN_CACHE:
        vocabulary = _VOCABULARIES[analyzer.language] = _Vocabulary()
    return vocabulary


Origin = Callable[[int, int], Span]

# Chinese characters fold through app.search.zh_fold (its code-point table on long texts,
# whose code points the phrase search below reuses).
_ZH_TABLE = CHAR_TABLE
# Taiwan vocabulary (ZH_PHRASES) is looked for only where the text holds the first two
# characters of a phrase: a numpy table of the characters that start a phrase and of those
# that are second in one screens the positions, then their pairs are looked up (sorted keys
# in numpy, a set in Python for short texts); the phrase lengths by first character, longest
# first (the regex's longest match).
_ZH_PAIRS = frozenset(p[:2] for p in ZH_PHRASES)
_ZH_PREFIXES = np.unique(
    np.fromiter((ord(p[0]) << UNIGRAM_SHIFT | ord(p[1]) for p in ZH_PHRASES), np.uint64)
)
_ZH_FIRST = np.zeros(len(_ZH_TABLE), dtype=bool)
_ZH_FIRST[[ord(p[0]) for p in ZH_PHRASES]] = True
_ZH_SECOND = np.zeros(len(_ZH_TABLE), dtype=bool)
_ZH_SECOND[[ord(p[1]) for p in ZH_PHRASES]] = True
_ZH_LENGTHS: dict[str, tuple[int, ...]] = {}
for _phrase in ZH_PHRASES:
    _ZH_LENGTHS[_phrase[0]] = tuple(sorted({*_ZH_LENGTHS.get(_phrase[0], ()), len(_phrase)}))[::-1]
assert min(map(len, ZH_PHRASES)) >= 2  # a one-character phrase would have no prefix pair
assert max(ord(c) for p in ZH_PHRASES for c in p) < len(_ZH_TABLE)


def _zh_phrases(folded: str, codes: np.ndarray | None) -> list[tuple[int, int, str]]:
    """ZH_PHRASE_RE.finditer(folded) as (start, end, replacement): at each position from
    left to right the longest phrase, the search going on after it."""
    if codes is None:
        starts: list[int] = [p for p in range(len(folded) - 1) if folded[p : p + 2] in _ZH_PAIRS]
    else:
        inside = np.minimum(codes, len(_ZH_TABLE) - 1)  # beyond the table: in no phrase
        screened = np.flatnonzero(_ZH_FIRST[inside[:-1]] & _ZH_SECOND[inside[1:]])
        pairs = codes[screened].astype(np.uint64) << np.uint64(UNIGRAM_SHIFT) | codes[screened + 1]
        at = np.minimum(np.searchsorted(_ZH_PREFIXES, pairs), len(_ZH_PREFIXES) - 1)
        starts = screened[_ZH_PREFIXES[at] == pairs].tolist()
    out: list[tuple[int, int, str]] = []
    after = 0
    for p in starts:
        if p < after:
            continue
        for n in _ZH_LENGTHS[folded[p]]:
            if p + n > len(folded):
                continue
            replacement = ZH_PHRASES.get(folded[p : p + n])
            if replacement is not None:
                out.append((p, p + n, replacement))
                after = p + n
                break
    return out


def _fold(text: str, analyzer: Analyzer) -> tuple[str, Origin]:
    """The text folded as the index folds CJK runs, and a map from a span of the folded text
    to the span of original characters it came from."""
    folded = normalize(text)
    if len(folded) != len(text) or not analyzer.zh_fold:
        # NFKC or case folding changed lengths (an ellipsis, a ligature), or no Chinese
        # folding: the character-by-character map.
        folded, starts, ends = _fold_mapped(text, folded, analyzer)
        if starts is None or ends is None:
            return folded, _same
        return folded, lambda i, j: (starts[i], ends[j - 1])
    folded, codes = fold_chars_and_codes(folded)
    phrases = _zh_phrases(folded, codes)
    if not phrases:
        return folded, _same
    # Folded text: the text between phrases as it is, each phrase replaced. A folded
    # position inside a replacement comes from the whole phrase.
    pieces: list[str] = []
    firsts: list[int] = []  # where each replacement starts in the folded text
    shift = 0  # folded position minus original position, after the phrases so far
    shifts: list[int] = [0]
    last = 0
    for a, b, replacement in phrases:
        pieces += (folded[last:a], replacement)
        firsts.append(a + shift)
        shift += len(replacement) - (b - a)
        shifts.append(shift)
        last = b

    def origin(i: int, j: int) -> Span:
        return _origin_start(i), _origin_end(j - 1)

    def _locate(x: int) -> tuple[int, bool]:
        k = bisect.bisect_right(firsts, x) - 1
        if k >= 0 and x < firsts[k] + len(phrases[k][2]):
            return k, True
        return k, False

    def _origin_start(x: int) -> int:
        k, inside = _locate(x)
        return phrases[k][0] if inside else x - shifts[k + 1]

    def _origin_end(x: int) -> int:
        k, inside = _locate(x)
        return phrases[k][1] if inside else x - shifts[k + 1] + 1

    pieces.append(folded[last:])
    return "".join(pieces), origin


def _same(i: int, j: int) -> Span:
    return i, j


def _fold_mapped(
    text: str, folded: str, analyzer: Analyzer
) -> tuple[str, list[int] | None, list[int] | None]:
    """The text folded (`folded`: normalize(text)), and for each folded character the span
    of original characters it came from (None, None when the two align one to one)."""
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
    folded = fold_chars(folded)  # one character to one character
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


def _is_word_char(char: str) -> bool:
    """Whether `char` is in WORD_RE's class (re's \\w is str.isalnum() or "_")."""
    return char.isalnum() and _CJK_CHAR_RE.match(char) is None


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
