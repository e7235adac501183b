"""The work a query does, counted (not timed): positions are read only for the documents
still undecided (docs/search.md, "Cost model"). The indexes here post no pair terms (an
empty pair list), so every phrase is proven from positions."""

from __future__ import annotations

import numpy as np
import pytest

from app.search import searcher
from tests.search.conftest import doc, searcher_for
from tests.search.test_syntax import hits


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes of word positions each proof step reads, in order."""
    seen: list[int] = []
    real = searcher.decode_gaps

    def counting(data: np.ndarray, nbytes: np.ndarray, offsets: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        seen.append(int(data.size))
        return real(data, nbytes, offsets)

    monkeypatch.setattr(searcher, "decode_gaps", counting)
    return seen


def test_or_alternatives_skip_documents_already_matched(decoded: list[int]) -> None:
    docs = [doc(f"alpha beta gamma delta {i}") for i in range(20)]
    s = searcher_for("en", docs, ())
    assert hits(s, '"alpha beta" OR "gamma delta"') == set(range(20))
    # The first alternative matched every document: the second reads no position at all.
    assert len(decoded) == 2


def test_exclusions_read_only_the_candidates_left(decoded: list[int]) -> None:
    docs = [doc("alpha beta gamma delta")] * 10 + [doc("alpha gamma beta delta")] * 10
    s = searcher_for("en", docs, ())
    assert hits(s, 'alpha -"alpha beta" -"gamma delta"') == set(range(10, 20))
    # Either exclusion may run first; the second reads the positions of what is left only.
    first, second = sum(decoded[:2]), sum(decoded[2:])
    assert second < first


def test_a_long_phrase_reads_each_next_word_only_where_a_start_is_left(
    decoded: list[int],
) -> None:
    whole = "one two three four five six"
    broken = "one x two three four five six"  # every word, but "one two" not adjacent
    s = searcher_for("en", [doc(whole)] * 5 + [doc(broken)] * 5, ())
    assert hits(s, f'"{whole}"') == set(range(5))
    # One position per word per document: the first two words are read for all ten
    # candidates, every next word only for the five that still have a start.
    assert decoded == [10, 10, 5, 5, 5, 5]


def test_phrases_of_kept_words_are_proven_from_their_keys(
    decoded: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phrases whose words' keys are kept are proven from those keys alone: no posting list
    is intersected, and each word is decoded once, for every later query."""
    monkeypatch.setattr(searcher, "_KEEP_DECODED", 0)
    docs = [doc(f"alpha beta gamma delta {i}") for i in range(10)] + [doc("beta alpha")] * 10
    s = searcher_for("en", docs, ())
    intersected: list[object] = []
    real = searcher.Searcher._intersect
    monkeypatch.setattr(
        searcher.Searcher, "_intersect", lambda *a: intersected.append(a) or real(*a)
    )
    assert hits(s, '"alpha beta" OR "gamma delta"') == set(range(10))
    assert hits(s, '"beta alpha" OR "delta gamma"') == set(range(10, 20))
    assert intersected == []
    assert len(decoded) == 4  # alpha, beta, gamma, delta: once each


def test_a_pair_word_beside_another_word_is_proven_only_where_they_are_near(
    decoded: list[int],
) -> None:
    """A phrase of a pair word and another word reads positions only in the documents of
    its near term (app/search/analyzers.py near_key), not in every document holding both."""
    apart = [doc(f"govern {i} zebra {i} govern") for i in range(18)]
    near = [doc("govern zebra"), doc("x govern zebra")]
    s = searcher_for("en", apart + near, ("govern",))
    assert hits(s, '"govern zebra"') == {18, 19}
    assert decoded == [2, 2]  # one position byte per word, in the two near documents
    decoded.clear()
    t = searcher_for("en", apart + near, ())  # no pair words: every document is read
    assert hits(t, '"govern zebra"') == {18, 19}
    assert sum(decoded) > 40
