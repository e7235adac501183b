"""Chinese folding, owned here: traditional -> simplified characters (OpenCC's table), then
Taiwan -> Mainland vocabulary (``软体`` -> ``软件``), from the tables of app/search/zh_tables.py.

The analysers (documents and queries), the indexer (every document's code points at once),
the highlighter (with a map back to the original text) and the comment terms
(app/comments/terms.py, characters only) all fold through these functions, so a character
folds the same everywhere:

* `fold_chars(text)`: the character fold, one character to one character (str.translate on
  short texts, a code-point array on long ones: the same map);
* `fold_code_points(cps)`: the same on an array of code points;
* `fold_phrases(text)`: the vocabulary fold of character-folded text;
* `fold(text)`: both, as a zh_cn or zh_tw CJK run is folded.
"""

from __future__ import annotations

import re

import numpy as np

from app.search import zh_tables

# traditional code point -> simplified code point; no chains (no target is a source)
ZH_FOLD: dict[int, int] = {ord(src): ord(dst) for src, dst in zh_tables.T2S.items()}

# Taiwan vocabulary -> Mainland vocabulary (``软体`` -> ``软件``), applied after character
# folding on both sides. Longest match, left to right, as OpenCC converts: the regex is a
# trie whose branches try longer continuations before ending, so the first match found at a
# position is the longest one; text without any phrase costs one C-level scan.
ZH_PHRASES: dict[str, str] = zh_tables.PHRASES


def _trie_pattern(words: list[str]) -> str:
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def render(node: dict) -> str:
        branches = [re.escape(ch) + render(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = "|".join(branches)
        return f"(?:{body})?" if "" in node else f"(?:{body})"

    return render(trie)


ZH_PHRASE_RE = re.compile(_trie_pattern(sorted(ZH_PHRASES)))

# The character fold as a code-point table, up to the last character folded or in a phrase
# (a code point past it folds to itself). str.translate looks a dict up per character
# (about 55 ns); the table maps a long text in a few µs, so texts from ARRAY_FROM characters
# go through it.
CHAR_TABLE = np.arange(
    max(max(ZH_FOLD), *(ord(ch) for phrase in ZH_PHRASES for ch in phrase)) + 1, dtype=np.uint32
)
CHAR_TABLE[np.fromiter(ZH_FOLD, dtype=np.int64)] = np.fromiter(ZH_FOLD.values(), dtype=np.uint32)
ARRAY_FROM = 64


def fold_code_points(cps: np.ndarray) -> np.ndarray:
    """Code points (uint32) with the character fold applied."""
    if cps.size and int(cps.max()) >= CHAR_TABLE.size:  # past the table (rare: planes 3 up)
        inside = np.minimum(cps, CHAR_TABLE.size - 1)
        return np.where(cps < CHAR_TABLE.size, CHAR_TABLE.take(inside), cps).astype(np.uint32)
    return CHAR_TABLE.take(cps)


def fold_chars_and_codes(text: str) -> tuple[str, np.ndarray | None]:
    """`fold_chars(text)`, and its code points when they were computed (long texts)."""
    if len(text) < ARRAY_FROM:
        return text.translate(ZH_FOLD), None
    codes = fold_code_points(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32))
    return codes.tobytes().decode("utf-32-le", "surrogatepass"), codes


def fold_chars(text: str) -> str:
    """Traditional -> simplified characters, one character to one character."""
    return fold_chars_and_codes(text)[0]


def fold_phrases(text: str) -> str:
    """Rewrite Taiwan phrases of character-folded text to their Mainland form."""
    return ZH_PHRASE_RE.sub(lambda m: ZH_PHRASES[m.group()], text)


def fold(text: str) -> str:
    """A zh_cn or zh_tw CJK run as the index and the queries hold it: characters, then
    vocabulary."""
    return fold_phrases(fold_chars(text))
