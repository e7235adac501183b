"""Per-language text analysis, shared by the index builder and the query path.

Both sides must produce identical terms, so every rule that turns text into terms lives here,
and the indexer calls the same functions (vectorised around them, never re-implemented):

* every language: Unicode NFKC, then case folding;
* words (letters/digits outside the CJK blocks) are accent-folded (``économie`` -> ``economie``,
  ``Straße`` -> ``strasse``, ``ø`` -> ``o``) and Snowball-stemmed with the language's stemmer;
  Latin words inside ko/ja/zh text use the English stemmer;
* CJK runs (Han, kana, Hangul) become overlapping character bigrams like Elasticsearch's
  ``cjk_bigram`` filter; documents also index one unigram per character so that a
  one-character query works; a query run of three or more characters must also occur as that
  exact sequence (bigrams alone would accept ``AB`` and ``BC`` far apart for ``ABC``): every
  trigram of the run must be in the document, which settles a three-character run, and a
  longer run is proven from the positions of trigrams that cover it;
* zh_cn and zh_tw fold traditional characters to simplified ones with OpenCC's table, on both
  sides, so either script finds the other;
* in ko/ja/zh documents, two runs apart only by whitespace or punctuation are joined by a run
  gap (RUN_GAP) whose spanning trigrams are indexed too, so a quoted phrase's runs are proven
  adjacent (``"차량 가격을"``) like one run.
* in en/fr/de/es/it documents, two of the index's pair words (app/search/pair_words.py: the
  archive's most frequent words) at adjacent positions are also posted as one pair term, so
  ``"of the"`` is one posting list.

Two tokenisation paths, each used by documents and queries of its languages alike:

* en/fr/de/es/it: the text is split at ASCII separators (fast bytes ``translate`` + ``split``),
  then each distinct raw token is folded and cut into words once (the vocabulary is far smaller
  than the text);
* ko/ja/zh: the text is split once into CJK runs and the non-CJK text between them.
"""

from __future__ import annotations

import re
import threading
import unicodedata
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import Stemmer

from app.search.zh_fold import ZH_FOLD
from app.search.zh_fold import fold as fold_zh

if TYPE_CHECKING:
    import numpy as np

LATIN_STEMMERS: dict[str, str] = {
    "en": "english",
    "fr": "french",
    "de": "german",
    "es": "spanish",
    "it": "italian",
}
ZH_LANGUAGES: frozenset[str] = frozenset({"zh_cn", "zh_tw"})
CJK_LANGUAGES: frozenset[str] = frozenset({"ko", "ja", *ZH_LANGUAGES})
SUPPORTED: frozenset[str] = frozenset({*LATIN_STEMMERS, *CJK_LANGUAGES})

# Characters indexed as CJK n-grams. Kana punctuation (゠ ・) and the spacing voicing marks
# (゛ ゜, which NFKC turns into a space plus a combining mark) are left out on purpose.
CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3041-\u3096\u3099\u309a\u309d-\u309f"  # Hiragana
    "\u30a1-\u30fa\u30fc-\u30ff"  # Katakana (with ー)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U000323af"  # CJK extensions B-H
)
CJK_RUN_RE = re.compile(f"[{CJK_CLASS}]+")
# Splitting with a capture group yields CJK runs at even and the text between at odd indices.
_CJK_SPLIT_RE = re.compile(f"([^{CJK_CLASS}]+)")
# Letters and digits outside the CJK blocks; "_" and punctuation separate words, so
# "l'économie" gives "l" and "economie" and "e-mail" gives "e" and "mail".
WORD_RE = re.compile(f"[^\\W_{CJK_CLASS}]+")

# Every ASCII byte but [0-9A-Za-z] separates raw tokens; non-ASCII bytes stay in tokens.
_ASCII_SEPARATORS = bytes(b for b in range(128) if not (chr(b).isascii() and chr(b).isalnum()))
_SEPARATE = bytes.maketrans(_ASCII_SEPARATORS, b" " * len(_ASCII_SEPARATORS))

UNIGRAM_SHIFT = 21  # code points fit in 21 bits

# --- NFKC ---------------------------------------------------------------------------------
# unicodedata.normalize("NFKC") costs about 0.4 us per character as soon as a text holds one
# compatibility character (a full-width parenthesis in Japanese news is enough), which made it
# the slowest step of the build. These characters are left unchanged by NFKC, never combine
# with the following character and never reorder, so only the runs of other characters (plus
# the one character before each run, which a combining mark may compose with) need normalising.
_NFKC_STABLE = (
    "\t\n\r\x20-\x7e"
    "\u00ab\u00bb\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u00ff"
    "\u0100-\u0131\u0134-\u013e\u0141-\u0148\u014a-\u017e"
    "\u2013-\u2016\u2018-\u2023"
    "\u3001\u3002\u300c-\u300f"
    "\u3041-\u3096\u30a1-\u30fa\u30fc-\u30fe"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3"
)
_NFKC_UNSTABLE_RE = re.compile(f"[^{_NFKC_STABLE}]+")


def nfkc(text: str) -> str:
    """Exactly unicodedata.normalize("NFKC", text), faster on mostly stable text."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    out: list[str] = []
    last = 0
    for match in _NFKC_UNSTABLE_RE.finditer(text):
        start, end = match.span()
        start = max(start - 1, last)
        out.append(text[last:start])
        out.append(unicodedata.normalize("NFKC", text[start:end]))
        last = end
    out.append(text[last:])
    return "".join(out)


def normalize(text: str) -> str:
    """NFKC then case folding (all languages)."""
    if text.isascii():
        return text.lower()  # casefold() == lower() on ASCII, and NFKC changes nothing
    return nfkc(text).casefold()


# --- accent folding -----------------------------------------------------------------------
_COMBINING_MARKS_RE = re.compile("[\u0300-\u036f]")
# Only text holding a precomposed Latin letter or a combining mark pays for NFD/NFC.
_NEEDS_ACCENT_FOLD_RE = re.compile("[\u00c0-\u036f\u1e00-\u1eff]")
# Letters that carry no decomposable accent but that readers type without it.
_LETTER_FOLDS: dict[str, str] = {
    "ø": "o",
    "đ": "d",
    "ð": "d",
    "ł": "l",
    "ħ": "h",
    "ı": "i",
    "æ": "ae",
    "œ": "oe",
    "þ": "th",
}
_LETTER_FOLD_RE = re.compile("[" + "".join(_LETTER_FOLDS) + "]")


def fold_accents(text: str) -> str:
    """Remove Latin diacritics from normalised text (U+0300-U+036F after NFD, plus ø, æ...).

    Kana voicing marks (U+3099/U+309A) and Hangul are outside that range and survive.
    """
    if text.isascii():
        return text
    if _NEEDS_ACCENT_FOLD_RE.search(text):
        text = _COMBINING_MARKS_RE.sub("", unicodedata.normalize("NFD", text))
        text = unicodedata.normalize("NFC", text)
    if _LETTER_FOLD_RE.search(text):
        text = _LETTER_FOLD_RE.sub(lambda m: _LETTER_FOLDS[m.group()], text)
    return text


# --- CJK ----------------------------------------------------------------------------------

PAIR_MARK = 1  # first field of a pair key: no character of a trigram (CJK or the run gap)
# First field of a near key: a pair word then another word, another word then a pair word.
# The pair word's number is shifted by NEAR_SHIFT, under it the other word's word_hash.
NEAR_MARKS = (2, 3)
NEAR_SHIFT = 32


def word_hash(stem: str) -> int:
    """32 bits of a stem for near keys (zlib.crc32: stable across processes and releases)."""
    return zlib.crc32(stem.encode("utf-8"))


# The pair and near key format, for one key (int) or many (int64 arrays) alike: the query
# side, the indexer and the Searcher all go through these.
_Key = TypeVar("_Key", int, "np.ndarray")


def pair_term(first: _Key, second: _Key) -> _Key:
    """Key of the pair term of pair words number ``first`` and ``second``."""
    return PAIR_MARK << 2 * UNIGRAM_SHIFT | first << UNIGRAM_SHIFT | second


def near_term(listed_first: bool, listed: _Key, other_hash: _Key) -> _Key:
    """Key of the near term of pair word number ``listed`` beside another word (its
    word_hash), the pair word first or second."""
    mark = NEAR_MARKS[0 if listed_first else 1]
    return mark << 2 * UNIGRAM_SHIFT | listed << NEAR_SHIFT | other_hash


def listed_in(key: int) -> tuple[int, ...]:
    """The pair word numbers a pair or near key names (none for a trigram key)."""
    mark, low = key >> 2 * UNIGRAM_SHIFT, (1 << UNIGRAM_SHIFT) - 1
    if mark == PAIR_MARK:
        return (key >> UNIGRAM_SHIFT & low, key & low)
    if mark in NEAR_MARKS:
        return (key >> NEAR_SHIFT & (1 << 2 * UNIGRAM_SHIFT - NEAR_SHIFT) - 1,)
    return ()


# Between two CJK runs of a document separated by whitespace and punctuation only (no word, no
# field boundary), the indexer's CJK piece holds this character instead of "\n" and posts the
# trigrams across it, so "차량 가격을" is proven as 차량, a separator, 가격을. Not a CJK
# character, so no unigram, bigram or query run contains it.
RUN_GAP = " "


def plain_gap(between: str) -> bool:
    """Whether text between two CJK runs is only whitespace and punctuation (no word: no
    letter or digit outside the CJK blocks, after accent folding, as WORD_RE finds words)."""
    if between == " ":
        return True
    return WORD_RE.search(between if between.isascii() else fold_accents(between)) is None


def run_proof(run: str) -> tuple[list[int], tuple[tuple[int, int], ...] | None]:
    """(trigram keys, covering trigrams) that prove a folded run of 3+ characters occurs as
    that sequence: every trigram must be posted, and a run of 4+ characters also needs its
    covering trigrams at their offsets from one start (None for 3 characters)."""
    trigrams = [trigram_key(*run[i : i + 3]) for i in range(len(run) - 2)]
    if len(run) < 4:
        return trigrams, None
    # ABCDEFG -> ABC at 0, DEF at 3, EFG at 4: every character, fewest lists.
    offsets = dict.fromkeys([*range(0, len(run) - 2, 3), len(run) - 3])
    return trigrams, tuple((trigram_key(*run[i : i + 3]), i) for i in offsets)


def bigram_key(first: str, second: str) -> int:
    """Integer key of a CJK bigram; keys sort like the two-character strings they stand for."""
    return ord(first) << UNIGRAM_SHIFT | ord(second)


def trigram_key(first: str, second: str, third: str) -> int:
    """Integer key of a CJK trigram (63 bits); keys sort like the strings they stand for."""
    return (ord(first) << UNIGRAM_SHIFT | ord(second)) << UNIGRAM_SHIFT | ord(third)


@dataclass(frozen=True)
class QueryTerms:
    words: tuple[str, ...]  # stemmed word terms, deduplicated, in query order
    unigrams: tuple[int, ...]  # code points of one-character CJK runs
    bigrams: tuple[int, ...]  # bigram keys of longer CJK runs (ranked)
    trigrams: tuple[int, ...]  # trigram keys of runs of 3+ characters (filter, not ranked)
    # Runs of 4+ characters, each as the trigrams that cover it: (trigram key, offset in run).
    phrases: tuple[tuple[tuple[int, int], ...], ...]

    @property
    def empty(self) -> bool:
        return not (self.words or self.unigrams or self.bigrams)


class Analyzer:
    """Text analysis for one language. Thread-safe: each thread gets its own C stemmer."""

    def __init__(self, language: str, pair_words: tuple[str, ...] = ()) -> None:
        if language not in SUPPORTED:
            raise ValueError(f"no analyser for language {language!r}")
        self.language = language
        self.cjk = language in CJK_LANGUAGES
        self.stemmer_name = LATIN_STEMMERS.get(language, "english")
        self.zh_fold: dict[int, int] = ZH_FOLD if language in ZH_LANGUAGES else {}
        self._local = threading.local()
        # Pair word (a stem, app/search/pair_words.py) -> its number in pair keys; empty: no
        # pair terms. Set by the index the analyser serves: it is the index's own list.
        self.pair_words = pair_words
        self.frequent: dict[str, int] = {s: i for i, s in enumerate(pair_words)}

    def pair_key(self, first: str, second: str) -> int | None:
        """The pair term of two stems at adjacent positions, when both are pair words."""
        i, j = self.frequent.get(first), self.frequent.get(second)
        if i is None or j is None:
            return None
        return pair_term(i, j)

    def near_key(self, first: str, second: str) -> int | None:
        """The near term of two stems at adjacent positions of which exactly one is a pair
        word (Latin languages): its documents hold the pair word there beside the other
        word or, rarely, another of the same word_hash. A filter only: the phrase is still
        proven from positions, on those documents."""
        if self.cjk:
            return None
        i, j = self.frequent.get(first), self.frequent.get(second)
        if (i is None) == (j is None):
            return None
        if i is not None:
            return near_term(True, i, word_hash(second))
        assert j is not None
        return near_term(False, j, word_hash(first))

    def _stemmer(self) -> Stemmer.Stemmer:
        # PyStemmer objects keep mutable state and must not be shared between threads.
        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:
            stemmer = Stemmer.Stemmer(self.stemmer_name)
            self._local.stemmer = stemmer
        return stemmer

    def stem_words(self, words: list[str]) -> list[str]:
        return self._stemmer().stemWords(words)

    def fold_cjk(self, run: str) -> str:
        return fold_zh(run) if self.zh_fold else run

    # Latin-language path -------------------------------------------------------------------
    @staticmethod
    def raw_tokens(normalized: str) -> list[bytes]:
        """Split normalised text at ASCII separators (UTF-8 bytes, no decoding)."""
        return normalized.encode("utf-8").translate(_SEPARATE).split()

    @staticmethod
    def token_parts(raw: str) -> tuple[list[str], list[str]]:
        """Accent-folded words and CJK runs of one raw token (before stemming/zh folding)."""
        if raw.isascii():
            return [raw], []
        folded = fold_accents(raw)
        return WORD_RE.findall(folded), CJK_RUN_RE.findall(folded)

    # CJK-language path ---------------------------------------------------------------------
    @staticmethod
    def split_cjk_text(normalized: str) -> tuple[list[str], list[str]]:
        """(CJK runs, accent-folded words) of normalised ko/ja/zh text, in text order."""
        parts = _CJK_SPLIT_RE.split(normalized)
        runs = [run for run in parts[0::2] if run]
        between = " ".join(parts[1::2])
        if not between.isascii():
            between = fold_accents(between)
        return runs, WORD_RE.findall(between)

    @staticmethod
    def cjk_piece(normalized: str) -> tuple[str, list[str]]:
        """(CJK piece, accent-folded words) of normalised ko/ja/zh text: the piece is its runs
        in order, each followed by RUN_GAP when only whitespace or punctuation separates it
        from the next run, else by "\n" (a word between, or the end of the text). The
        indexer posts the trigrams that span a RUN_GAP, which prove a phrase's runs
        adjacent."""
        parts = _CJK_SPLIT_RE.split(normalized)
        out: list[str] = []
        for i in range(0, len(parts), 2):
            run = parts[i]
            if not run:
                continue
            if out:
                out.append(RUN_GAP if plain_gap(parts[i - 1]) else "\n")
            out.append(run)
        if out:
            out.append("\n")
        between = " ".join(parts[1::2])
        if not between.isascii():
            between = fold_accents(between)
        return "".join(out), WORD_RE.findall(between)

    def phrase_stretches(self, phrase: str) -> list[str]:
        """The parts of a quoted phrase whose CJK runs must be adjacent: each maximal sequence
        of two or more runs separated by whitespace or punctuation only, its runs folded and
        joined by RUN_GAP (as cjk_piece joins a document's). A word between two runs ends a
        stretch."""
        parts = _CJK_SPLIT_RE.split(normalize(phrase))
        stretches: list[list[str]] = []
        for i in range(0, len(parts), 2):
            run = parts[i]
            if not run:
                continue
            if stretches and plain_gap(parts[i - 1]):
                stretches[-1].append(self.fold_cjk(run))
            else:
                stretches.append([self.fold_cjk(run)])
        return [RUN_GAP.join(s) for s in stretches if len(s) > 1]

    def query_parts(self, query: str) -> tuple[list[str], list[str]]:
        """(accent-folded words before stemming, CJK runs before zh folding) of a query:
        the search terms and the highlighter (app/search/highlight.py) both start here."""
        text = normalize(query)
        if self.cjk:
            runs, words = self.split_cjk_text(text)
            return words, runs
        words, runs = [], []
        for raw in self.raw_tokens(text):
            token_words, token_runs = self.token_parts(raw.decode("utf-8"))
            words.extend(token_words)
            runs.extend(token_runs)
        return words, runs

    def analyze_query(self, query: str) -> QueryTerms:
        words, runs = self.query_parts(query)
        unigrams: list[int] = []
        bigrams: list[int] = []
        trigrams: list[int] = []
        phrases: list[tuple[tuple[int, int], ...]] = []
        for raw_run in runs:
            run = self.fold_cjk(raw_run)
            if len(run) == 1:
                unigrams.append(ord(run))
                continue
            bigrams.extend(bigram_key(run[i], run[i + 1]) for i in range(len(run) - 1))
            run_trigrams, covers = run_proof(run)
            trigrams.extend(run_trigrams)
            if covers is not None:
                phrases.append(covers)
        return QueryTerms(
            words=tuple(dict.fromkeys(self.stem_words(words))),
            unigrams=tuple(dict.fromkeys(unigrams)),
            bigrams=tuple(dict.fromkeys(bigrams)),
            trigrams=tuple(dict.fromkeys(trigrams)),
            phrases=tuple(dict.fromkeys(phrases)),
        )


# One per (language, pair words): a worker sees one list a language per --full build.
_ANALYZERS: dict[tuple[str, tuple[str, ...]], Analyzer] = {}
_ANALYZERS_LOCK = threading.Lock()


def get_analyzer(language: str, pair_words: tuple[str, ...] = ()) -> Analyzer:
    """The shared analyser of a language and a list of pair words (an index's own)."""
    key = (language, pair_words)
    with _ANALYZERS_LOCK:
        analyzer = _ANALYZERS.get(key)
        if analyzer is None:
            analyzer = _ANALYZERS[key] = Analyzer(language, pair_words)
        return analyzer
