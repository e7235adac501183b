"""Search syntax inside ``q``: a parser to a small AST and a compiled query per analyser.

Syntax (../shared/API_CONTRACT.md section 7, docs/search.md "Search syntax"):

* ``"two words"``: a phrase, its analysed words adjacent and in order (proven from word
  positions); in CJK text, each run as that exact character sequence. An unclosed quote runs
  to the end of ``q``.
* ``-term`` / ``-"a phrase"`` at the start of a term: exclusion. Only a leading ``-`` counts
  (``covid-19`` and ``e-mail`` are words); ``--x`` is ``-x``; ``-`` alone is punctuation.
* ``OR`` (capitals, a term of its own) between two positive terms: either matches, binding
  tighter than the implicit AND (``a b OR c`` = a AND (b OR c)). An ``OR`` with no positive
  term on either side (at the start or end, ``OR OR``, next to an exclusion) is ignored.
* Terms that analyse to nothing (punctuation) are dropped; with no positive term left the
  query is empty (an empty page, never an error).

Parsing is one linear pass over at most a few hundred characters and never raises.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from app.search.analyzers import RUN_GAP, Analyzer, QueryTerms, normalize, run_proof


@dataclass(frozen=True, slots=True)
class Term:
    """One parsed term: a bare token or a quoted phrase, maybe negated."""

    text: str
    phrase: bool = False
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Parsed:
    """AND of clauses, each an OR of positive terms; and the negated terms."""

    clauses: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...]
    plain: bool  # no operator at all: ``q`` is analysed exactly as before the syntax existed


def parse(q: str) -> Parsed:
    clauses: list[list[Term]] = []
    excluded: list[Term] = []
    plain = True
    pending_or = False
    last_positive = False  # the previous term was positive (an OR may follow it)
    i, n = 0, len(q)
    while i < n:
        ch = q[i]
        if ch.isspace():
            i += 1
            continue
        negated = False
        if ch == "-" and i + 1 < n and not q[i + 1].isspace():
            negated = True
            while i < n and q[i] == "-":  # "--x" is "-x"
                i += 1
            if i >= n or q[i].isspace():
                continue  # only dashes: punctuation
            ch = q[i]
        if ch == '"':
            end = q.find('"', i + 1)
            if end < 0:
                end = n  # an unclosed quote runs to the end
            term = Term(q[i + 1 : end], phrase=True, negated=negated)
            i = end + 1
        else:
            start = i
            while i < n and not q[i].isspace() and q[i] != '"':
                i += 1
            text = q[start:i]
            if text == "OR" and not negated:
                plain = False
                pending_or = last_positive
                continue
            term = Term(text, negated=negated)
        if term.negated or term.phrase:
            plain = False
        if term.negated:
            excluded.append(term)
            pending_or = last_positive = False
            continue
        if pending_or and clauses:
            clauses[-1].append(term)
        else:
            clauses.append([term])
        pending_or, last_positive = False, True
    return Parsed(tuple(tuple(c) for c in clauses), tuple(excluded), plain)


@dataclass(frozen=True, slots=True)
class Part:
    """A conjunction to match: analysed terms (every CJK run proven as today) plus word
    phrases, each a sequence of stems that must sit at consecutive word positions."""

    terms: QueryTerms
    word_phrases: tuple[tuple[str, ...], ...] = ()


@dataclass(slots=True)
class CompiledQuery:
    """A parsed query analysed for one language.

    ``required``: the conjunction of every single-term clause; ``any_of``: the OR groups
    (two or more parts each); ``excluded``: parts whose matches are removed; ``scored``: the
    distinct positive terms (words, unigrams, bigrams) in scoring order.
    """

    required: Part | None
    any_of: tuple[tuple[Part, ...], ...]
    excluded: tuple[Part, ...]
    scored: QueryTerms
    positive_texts: list[str]

    @property
    def empty(self) -> bool:
        return self.required is None and not self.any_of

    @property
    def simple(self) -> bool:
        """Only AND of terms: exactly the pre-syntax query path (same rows, same scores)."""
        return (
            self.required is not None
            and not self.required.word_phrases
            and not self.any_of
            and not self.excluded
        )


def _words_in_order(analyzer: Analyzer, text: str) -> list[str]:
    """The analysed (stemmed) words of text, in order, with repeats."""
    normalized = normalize(text)
    if analyzer.cjk:
        words = analyzer.split_cjk_text(normalized)[1]
    else:
        words = []
        for raw in analyzer.raw_tokens(normalized):
            words.extend(analyzer.token_parts(raw.decode("utf-8"))[0])
    return analyzer.stem_words(words) if words else []


def _part(analyzer: Analyzer, terms: list[Term]) -> Part | None:
    analysed = analyzer.analyze_query(" ".join(t.text for t in terms))
    if analysed.empty:
        return None
    phrases = []
    trigrams, covers = list(analysed.trigrams), list(analysed.phrases)
    implied: set[str] = set()  # runs a ko/ja pair term proves present (their proofs go)
    for t in terms:
        if t.phrase:
            stems = _words_in_order(analyzer, t.text)
            # Adjacent pair words: their pair posting (a filter) proves them adjacent; a pair
            # word beside another word: their near posting narrows the proof's candidates.
            pairs = [analyzer.pair_key(a, b) for a, b in itertools.pairwise(stems)]
            near = [analyzer.near_key(a, b) for a, b in itertools.pairwise(stems)]
            trigrams.extend(k for k in pairs + near if k is not None)
            if len(stems) > 2 or (len(stems) == 2 and pairs[0] is None):
                phrases.append(tuple(stems))
            if analyzer.cjk:
                # Runs apart only by whitespace or punctuation must be adjacent: each stretch
                # is proven like one run, through the trigrams that span its run gaps.
                for stretch in analyzer.phrase_stretches(t.text):
                    # ko/ja: listed runs apart by a gap have a pair term (a run ending with
                    # the first, a gap, a run starting with the second): two such runs are
                    # proven by it alone, a longer stretch filtered by it.
                    runs = stretch.split(RUN_GAP)
                    run_pairs = [analyzer.pair_key(a, b) for a, b in itertools.pairwise(runs)]
                    trigrams.extend(k for k in run_pairs if k is not None)
                    if len(runs) == 2 and run_pairs[0] is not None:
                        implied.update(runs)
                        continue
                    stretch_trigrams, stretch_covers = run_proof(stretch)
                    trigrams.extend(stretch_trigrams)
                    if stretch_covers is not None:
                        covers.append(stretch_covers)
    if implied:
        # The pair's documents hold its runs: their proofs are implied, and so are their
        # trigram filters (those a remaining proof reads are kept: it looks them up).
        dropped: set[int] = set()
        for run in implied:
            run_trigrams, run_covers = run_proof(run) if len(run) >= 3 else ([], None)
            dropped.update(run_trigrams)
            covers = [c for c in covers if c != run_covers]
        dropped -= {k for cover in covers for k, _ in cover}
        trigrams = [k for k in trigrams if k not in dropped]
    if len(trigrams) != len(analysed.trigrams) or implied:
        analysed = replace(
            analysed,
            trigrams=tuple(dict.fromkeys(trigrams)),
            phrases=tuple(dict.fromkeys(covers)),
        )
    return Part(analysed, tuple(dict.fromkeys(phrases)))


def _merged_scoring(parts: list[Part]) -> QueryTerms:
    def distinct(attr: str) -> tuple:
        return tuple(dict.fromkeys(x for p in parts for x in getattr(p.terms, attr)))

    return QueryTerms(distinct("words"), distinct("unigrams"), distinct("bigrams"), (), ())


_EMPTY_TERMS = QueryTerms((), (), (), (), ())


# Quoted phrases a query may hold (positive, excluded or in an OR group): each is proven
# from word or trigram positions, the one cost that grows with the archive beyond a
# posting lookup (docs/search.md, "Cost model"). More is a 422 (docs/api.md section 7).
MAX_PHRASES = 8


def phrase_count(q: str) -> int:
    """How many quoted phrases parse(q) finds (an unclosed quote counts; ``""`` and a quote
    of spaces do not)."""
    if '"' not in q:
        return 0
    parsed = parse(q)
    terms = [t for clause in parsed.clauses for t in clause] + list(parsed.excluded)
    return sum(1 for t in terms if t.phrase and not t.text.isspace() and t.text)


def is_plain(q: str) -> bool:
    """parse(q).plain, without the parser: no quote, no ``OR`` token, no token that starts
    with ``-`` and holds more than dashes. (str.split() splits where str.isspace(), as
    parse() does.)"""
    if '"' in q:
        return False
    tokens = q.split()
    return "OR" not in tokens and not any(t[0] == "-" and t.strip("-") for t in tokens)


def compile_query(q: str, analyzer: Analyzer) -> CompiledQuery:
    """Parse ``q`` and analyse every term with the language's analyser. Never raises for any
    string; a query without a positive term is ``.empty``."""
    if is_plain(q):
        # No operator (most queries): skip the parser, analyse q exactly as before.
        terms = analyzer.analyze_query(q)
        if terms.empty:
            return CompiledQuery(None, (), (), _EMPTY_TERMS, [])
        return CompiledQuery(Part(terms), (), (), terms, q.split())
    parsed = parse(q)
    single: list[Term] = []
    groups: list[tuple[Part, ...]] = []
    texts: list[str] = []
    for clause in parsed.clauses:
        kept = [(t, p) for t in clause if (p := _part(analyzer, [t])) is not None]
        texts.extend(t.text for t, _ in kept)
        alternatives = tuple(dict.fromkeys(p for _, p in kept))
        if len(alternatives) == 1:
            single.append(kept[0][0])
        elif alternatives:
            groups.append(alternatives)
    required = _part(analyzer, single) if single else None
    excluded = tuple(
        dict.fromkeys(p for t in parsed.excluded if (p := _part(analyzer, [t])) is not None)
    )
    if required is None and not groups:
        return CompiledQuery(None, (), (), _EMPTY_TERMS, [])
    parts = ([required] if required else []) + [p for g in groups for p in g]
    return CompiledQuery(required, tuple(groups), excluded, _merged_scoring(parts), texts)
