"""Banned and suspect term lists for comment moderation (docs/api.md §12, "Terms").

The directory named by ``NEWS_MODERATION_TERMS`` holds ``<language>.banned`` and
``<language>.suspect``: UTF-8, one term a line; a line whose first non-blank character is ``#``
is a comment, blank lines are ignored.

Normalisation (``fold``), the same for text and terms, in this order so that it is idempotent:

1. zero-width characters (U+200B, U+200C, U+200D, U+2060, U+FEFF) and soft hyphens (U+00AD)
   are removed first, so that a letter and a combining mark they separated compose in step 2
   (removing them after NFKC would leave a decomposed pair that a second fold would compose);
2. NFKC (full-width forms, ligatures, compatibility ideographs, exotic spaces -> U+0020);
3. case folding (``ß`` and ``ẞ`` -> ``ss``; Turkish ``İ`` -> ``i`` + U+0307, ``ı`` stays);
4. NFKC again (case folding can leave a sequence that NFKC composes);
5. zh_cn and zh_tw only: traditional -> simplified characters with OpenCC's table
   (app.search.zh_fold.fold_chars; no chains, its targets are NFKC- and case-stable). Not ja:
   Japanese kanji are not traditional Chinese, and the table merges characters that Japanese
   keeps apart (後/后, 葉/叶, 乾/幹/干), so a ja term would match unrelated words; the search
   analysers do not fold ja either. Not the Taiwan -> Mainland vocabulary (软体 -> 软件):
   that replaces words, not scripts; list both words where both are meant.

NFKC and case folding never yield an invisible character, and the Chinese table has no chains
and only NFKC- and case-stable targets (the tests check every code point), so nothing a later
step yields is undone by folding again: fold(fold(x)) == fold(x).

Matching, on folded text and folded terms, where runs of whitespace (``str.isspace``) in both
count as one space:

* ko, ja, zh_cn, zh_tw: a term matches anywhere in the text (substring). A trailing ``*`` is
  dropped: a substring already matches whatever follows.
* en, fr, de, es, it: a term matches whole words. A word character is a letter or digit
  (``str.isalnum``) or a combining mark (Unicode category M, so ``i̇`` from ``İ`` stays inside its
  word); everything else (spaces, punctuation, ``_``, ``'``, ``-``) is not. The character before
  a match and, unless the term ends in ``*``, the one after must not be word characters, so
  ``idiot`` matches ``l'idiot!`` but not ``idiots``, and ``idiot*`` matches ``idiots`` too. A
  term of several words (``buy now``) matches those words separated by whitespace in the
  text (any run of spaces, tabs or line breaks), with the same boundaries at both ends;
  punctuation between them is not a separator (``buy-now`` is a term of its own).

One Aho-Corasick automaton per language (ahocorasick_rs: the Rust aho-corasick crate) holds
both lists; the text is scanned once for every match, overlapping ones included, and Latin
candidates are then checked at their two ends. A term in both lists is banned.

Reloading: ``verdict`` stats the directory at most once every ``check_seconds`` (monotonic
clock, no thread); a language whose file changed (mtime, size or inode), appeared or vanished
is rebuilt and swapped in with one assignment, under a lock that only reloads take (a thread
that finds a reload under way goes on with the lists in force). A missing file is an empty
list. A file that cannot be read or decoded, or is over MAX_FILE_BYTES, is logged and its
previous list stays in force; a term over MAX_TERM_CHARS is skipped with a warning naming the
file and line. Files of unknown languages are ignored with one warning each.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import ahocorasick_rs
import numpy as np

from app.languages import LANGUAGES
from app.search.analyzers import CJK_LANGUAGES, ZH_LANGUAGES, nfkc
from app.search.zh_fold import fold_chars

log = logging.getLogger("app.comments.terms")

Verdict = Literal["banned", "suspect"]

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TERM_CHARS = 200
# Line warnings logged per file before the rest are only counted.
_MAX_LINE_WARNINGS = 10

_KINDS = ("banned", "suspect")  # file name suffixes

# --- fold -----------------------------------------------------------------------------------
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE_RE = re.compile(f"[{INVISIBLE}]+")


class _CharMap:
    """A one-to-one character mapping. str.translate looks a dict up per character (about
    55 ns: 110 µs for a comment of 2,000 characters); an array indexed by code point maps
    the same comment in about 5 µs, so longer texts go through the array."""

    ARRAY_FROM = 64  # shorter texts: str.translate is cheaper than the array's setup

    def __init__(self, mapping: dict[int, int]) -> None:
        self.mapping = mapping
        self.limit = max(mapping) + 1
        self.table = np.arange(self.limit, dtype=np.uint32)
        self.table[list(mapping)] = list(mapping.values())

    def __call__(self, text: str) -> str:
        if len(text) < self.ARRAY_FROM:
            return text.translate(self.mapping)
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        if points.max() < self.limit:
            mapped = self.table.take(points)
        else:  # a character past the table (rare: planes 3 and up)
            inside = np.minimum(points, self.limit - 1)
            mapped = np.where(points < self.limit, self.table.take(inside), points)
        return mapped.tobytes().decode("utf-32-le")


# Characters whose compatibility decomposition (NFKD) is one other character: full-width
# forms (，！？１Ａ), the ideographic space, half-width kana, compatibility ideographs,
# mathematical letters (𝐢𝐝𝐢𝐨𝐭). Replacing them by it first leaves NFKC's result as it is (NFKC
# of a text is the composition of its NFKD, which this does not change) and spares
# app.search's nfkc() its slow path, which Chinese and Japanese comments take at every
# full-width comma (90 µs for 2,000 characters; 5 µs with this map). Planes 0 to 2: the
# planes above have no such character but tags and variation selectors, which NFKC keeps.
_NFKD_SINGLES = _CharMap(
    {
        code: ord(decomposed)
        for code in range(0x80, 0x30000)
        if len(decomposed := unicodedata.normalize("NFKD", chr(code))) == 1
        and decomposed != chr(code)
    }
)


def _has_invisible(text: str) -> bool:
    return any(char in text for char in INVISIBLE)  # six fast scans; a regex is 10x slower


def fold(language: str, text: str) -> str:
    """The normalisation of the module docstring: invisible characters removed, NFKC, case
    folding, NFKC, and for zh_cn/zh_tw traditional -> simplified characters."""
    if text.isascii():
        return text.lower()  # ASCII: no invisible character, NFKC changes nothing
    if _has_invisible(text):
        text = _INVISIBLE_RE.sub("", text)
    if not unicodedata.is_normalized("NFKC", text):
        text = nfkc(_NFKD_SINGLES(text))
    text = nfkc(text.casefold())
    if language in ZH_LANGUAGES:
        text = fold_chars(text)
    return text


# --- words ----------------------------------------------------------------------------------
def is_word_char(char: str) -> bool:
    """Letters and digits (str.isalnum) and combining marks (category M): the one rule for
    where a Latin-script word starts and ends."""
    return char.isalnum() or (not char.isascii() and unicodedata.category(char)[0] == "M")


def _even_spaces(text: str) -> str:
    """Runs of whitespace (str.isspace) as one space, none at the ends. isprintable() is
    false for every whitespace character but the space: one fast scan when nothing is to do.
    """
    if not text.isprintable():
        text = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
        if not text.isprintable():  # other whitespace, or a character that is not printable
            return " ".join(text.split())
    while "  " in text:  # replacing in place beats splitting into words (Korean: 3x)
        text = text.replace("  ", " ")
    if text[:1] == " " or text[-1:] == " ":
        text = text.strip(" ")
    return text


def prepare(language: str, text: str) -> str:
    """Text as the automaton scans it: folded, whitespace runs as one space."""
    return _even_spaces(fold(language, text))


def term_key(language: str, line: str) -> tuple[str, bool]:
    """A list line as the automaton stores it and whether it is a prefix term ("" to skip)."""
    key = prepare(language, line)
    prefix = key.endswith("*")
    if prefix:
        key = key.rstrip("* ")  # so that no key ends in "*" (see Terms)
    if language in CJK_LANGUAGES:
        prefix = False  # substring matching already takes whatever follows
    return key, prefix


# --- compiled lists -------------------------------------------------------------------------
# Per automaton pattern, which lists hold it and how: banned whole, banned prefix, suspect
# whole, suspect prefix (one key can be all four).
_BANNED_WHOLE, _BANNED_PREFIX, _SUSPECT_WHOLE, _SUSPECT_PREFIX = 1, 2, 4, 8
_BANNED_ANY = _BANNED_WHOLE | _BANNED_PREFIX
_SUSPECT_ANY = _SUSPECT_WHOLE | _SUSPECT_PREFIX
_PREFIX_ANY = _BANNED_PREFIX | _SUSPECT_PREFIX

# A list in force, as one string: its distinct keys, sorted, one a line, a prefix term's
# with a "*" after it (no key ends in "*": term_key strips it). Some 2 MB for 18 lists of
# 10,000 terms, where a set of (key, prefix) tuples held 33 MB.
Terms = str


def _term_lines(terms: Terms) -> list[str]:
    return terms.split("\n") if terms else []


@dataclass(frozen=True)
class Matcher:
    """One language's two lists in one automaton (built once, then only read; searching
    it from several threads at once is safe)."""

    automaton: ahocorasick_rs.AhoCorasick
    kinds: tuple[int, ...]  # per pattern index, its bits above
    latin: bool
    # Whether a key holds a space (a term of several words). Without one, whitespace need
    # not be evened out: no key can match across it, and to the boundary checks any
    # whitespace is a non-word character.
    spaced: bool

    @classmethod
    def build(cls, language: str, banned: Terms, suspect: Terms) -> Matcher | None:
        """None when both lists are empty."""
        bits: dict[str, int] = {}
        for terms, whole, prefix in (
            (banned, _BANNED_WHOLE, _BANNED_PREFIX),
            (suspect, _SUSPECT_WHOLE, _SUSPECT_PREFIX),
        ):
            for line in _term_lines(terms):
                if line.endswith("*"):
                    bits[line[:-1]] = bits.get(line[:-1], 0) | prefix
                else:
                    bits[line] = bits.get(line, 0) | whole
        if not bits:
            return None
        # Every match, overlapping ones too: "ab" suspect must not hide "abc" banned, and a
        # Latin candidate that fails its boundaries must not hide one that passes.
        automaton = ahocorasick_rs.AhoCorasick(bits, store_patterns=False)
        latin = language not in CJK_LANGUAGES
        return cls(automaton, tuple(bits.values()), latin, any(" " in key for key in bits))

    def verdict(self, language: str, text: str) -> Verdict | None:
        """The verdict for one text."""
        text = fold(language, text)
        return self.scan(_even_spaces(text) if self.spaced else text)

    def scan(self, text: str) -> Verdict | None:
        """The verdict for one prepared text (prepare(); fold() is enough when not spaced)."""
        matches = self.automaton.find_matches_as_indexes(text, overlapping=True)
        if not matches:
            return None
        kinds = self.kinds
        found: Verdict | None = None
        if not self.latin:
            for index, _start, _end in matches:
                if kinds[index] & _BANNED_ANY:
                    return "banned"
                found = "suspect"
            return found
        size = len(text)
        for index, start, end in matches:
            bits = kinds[index]
            if found is not None and not bits & _BANNED_ANY:
                continue  # a suspect term is already found: only a banned one matters now
            if start > 0 and is_word_char(text[start - 1]):
                continue
            if end < size and is_word_char(text[end]):
                bits &= _PREFIX_ANY  # the match ends inside a word: only prefix terms hold
            if bits & _BANNED_ANY:
                return "banned"
            if bits & _SUSPECT_ANY:
                found = "suspect"
        return found


# --- files ----------------------------------------------------------------------------------
Signature = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: no such file


@dataclass(frozen=True)
class _FileState:
    signature: Signature  # of the version last looked at (loaded, or refused)
    terms: Terms  # the list in force


class TermError(Exception):
    """A list file that is refused as a whole (its previous list stays in force)."""


def parse_terms(language: str, data: bytes, name: str) -> Terms:
    """A list file's terms; comment, blank, over-long and empty-after-folding lines skipped."""
    if len(data) > MAX_FILE_BYTES:
        raise TermError(f"over {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TermError(f"not UTF-8 ({exc})") from None
    terms: set[str] = set()
    too_long = 0
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) > MAX_TERM_CHARS:
            too_long += 1
            if too_long <= _MAX_LINE_WARNINGS:
                log.warning(
                    "moderation terms %s line %d: term over %d characters skipped",
                    name,
                    number,
                    MAX_TERM_CHARS,
                )
            continue
        key, prefix = term_key(language, line)
        if key:
            terms.add(key + "*" if prefix else key)
    if too_long > _MAX_LINE_WARNINGS:
        log.warning(
            "moderation terms %s: %d terms over %d characters skipped in all",
            name,
            too_long,
            MAX_TERM_CHARS,
        )
    return "\n".join(sorted(terms))


def _read(path: Path) -> bytes:
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size > MAX_FILE_BYTES:
            raise TermError(f"over {MAX_FILE_BYTES} bytes")
        return file.read(MAX_FILE_BYTES + 1)


_EMPTY = _FileState(None, "")


class TermLists:
    """The lists of one directory, per process; see the module docstring."""

    def __init__(
        self,
        directory: Path | None,
        check_seconds: float = 1.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._directory = directory
        self._check_seconds = check_seconds
        self._clock = clock
        self._lock = threading.Lock()
        # Read without the lock: each is replaced whole, never changed in place.
        self._matchers: dict[str, Matcher] = {}
        self._sizes: dict[str, tuple[int, int]] = {}
        self._next_check = float("-inf")
        # Under the lock only.
        self._files: dict[tuple[str, str], _FileState] = {}
        self._warned: set[str] = set()
        if directory is not None:
            self._sizes = {language: (0, 0) for language in LANGUAGES}
            with self._lock:
                self._reload()

    def verdict(self, language: str, *texts: str) -> Verdict | None:
        """ "banned" if a text holds a banned term, else "suspect" if one holds a suspect term,
        else None."""
        if self._directory is None:
            return None
        if self._clock() >= self._next_check and self._lock.acquire(blocking=False):
            try:  # another thread reloading: go on with the lists in force
                if self._clock() >= self._next_check:
                    self._reload()
            finally:
                self._lock.release()
        matcher = self._matchers.get(language)
        if matcher is None:
            return None
        found: Verdict | None = None
        for text in texts:
            verdict = matcher.verdict(language, text)
            if verdict == "banned":
                return verdict
            found = found or verdict
        return found

    def sizes(self) -> dict[str, tuple[int, int]]:
        """Language -> (banned, suspect) terms in force (distinct after folding); every
        language when a directory is set, none otherwise."""
        return dict(self._sizes)

    # -- reloading (under self._lock) --------------------------------------------------------
    def _reload(self) -> None:
        self._next_check = self._clock() + self._check_seconds
        try:
            self._reload_changed()
        except Exception:  # never let a reload break a create
            log.exception("moderation terms: reload failed; the lists in force stay")

    def _reload_changed(self) -> None:
        assert self._directory is not None
        directory = self._directory
        try:
            names = set(os.listdir(directory))
        except OSError as exc:
            self._warn_once(f"dir:{exc}", "moderation terms directory %s: %s", directory, exc)
            return
        for name in sorted(names):
            stem, _, kind = name.rpartition(".")
            if kind in _KINDS and stem not in LANGUAGES:
                self._warn_once(name, "moderation terms %s: unknown language, ignored", name)
        changed: set[str] = set()
        for language in LANGUAGES:
            for kind in _KINDS:
                name = f"{language}.{kind}"
                old = self._files.get((language, kind), _EMPTY)
                new = self._look_at(language, directory / name, name in names, old)
                if new is not old:
                    self._files[language, kind] = new
                    if new.terms != old.terms:
                        changed.add(language)
        if not changed:
            return
        matchers = dict(self._matchers)
        sizes = dict(self._sizes)
        for language in changed:
            banned = self._files.get((language, "banned"), _EMPTY).terms
            suspect = self._files.get((language, "suspect"), _EMPTY).terms
            started = time.perf_counter()
            matcher = Matcher.build(language, banned, suspect)
            if matcher is None:
                matchers.pop(language, None)
            else:
                matchers[language] = matcher
            sizes[language] = (len(_term_lines(banned)), len(_term_lines(suspect)))
            log.info(
                "moderation terms %s: %d banned, %d suspect (%.0f ms)",
                language,
                *sizes[language],
                (time.perf_counter() - started) * 1000,
            )
        self._matchers = matchers  # one assignment each: readers see old or new lists
        self._sizes = sizes

    def _look_at(self, language: str, path: Path, listed: bool, old: _FileState) -> _FileState:
        """The file's state: old when unchanged, else its new list (or old's, if refused)."""
        signature: Signature = None
        if listed:
            try:
                st = path.stat()
                signature = (st.st_mtime_ns, st.st_size, st.st_ino)
            except FileNotFoundError:
                signature = None
            except OSError as exc:
                log.error("moderation terms %s: %s; the list in force stays", path, exc)
                return old
        if signature == old.signature:
            return old
        if signature is None:
            return _FileState(None, "")
        try:
            terms = parse_terms(language, _read(path), str(path))
        except FileNotFoundError:
            return _FileState(None, "")
        except (OSError, TermError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            log.error("moderation terms %s refused: %s; the list in force stays", path, reason)
            return _FileState(signature, old.terms)
        return _FileState(signature, terms)

    def _warn_once(self, key: str, message: str, *args: object) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message, *args)
