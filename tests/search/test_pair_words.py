"""The pair words of an index (app/search/pair_words.py): the rule that chooses them, against
a brute-force count, and the index that records and uses them."""

from __future__ import annotations

import collections

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.search import pair_words
from app.search.analyzers import get_analyzer
from app.search.indexer import build_index, choose_pair_words
from app.search.query import _words_in_order
from app.search.searcher import Searcher
from tests.search.conftest import doc, searcher_for
from tests.search.test_syntax import hits

FUNCTION = ["the", "of", "and", "to", "a", "in"]
TOPIC = ["govern", "elect", "market", "zebra", "quorum", "harbour", "violin"]


def function_stems(language: str) -> list[str]:
    analyzer = get_analyzer(language)
    return [
        s for w in pair_words.FREQUENT_WORDS[language].split() for s in _words_in_order(analyzer, w)
    ]


@settings(max_examples=60, deadline=None)
@given(
    articles=st.lists(
        st.lists(st.sampled_from(FUNCTION + TOPIC), max_size=30), min_size=1, max_size=12
    ),
    cap=st.integers(1, 60),
)
def test_the_choice_is_the_function_words_then_the_brute_force_ranking(
    articles: list[list[str]], cap: int
) -> None:
    docs = [doc(content=" ".join(words)) for words in articles]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pair_words, "MAX_PAIR_WORDS", cap)
        chosen = choose_pair_words("en", docs)
    # Brute force: count every analysed word, rank by count then stem, keep those reaching
    # MIN_PER_ARTICLE an article, after the function words, up to the cap.
    counts = collections.Counter(
        s for words in articles for s in _words_in_order(get_analyzer("en"), " ".join(words))
    )
    expected = list(dict.fromkeys(function_stems("en")))
    for stem, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])):
        if n >= pair_words.MIN_PER_ARTICLE * len(articles) and stem not in expected:
            expected.append(stem)
    assert list(chosen) == expected[:cap]
    assert len(set(chosen)) == len(chosen)


def test_korean_lists_its_runs_japanese_its_gap_ends_chinese_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pair_words, "MIN_PER_ARTICLE", 1.0)
    assert choose_pair_words("zh_tw", [doc(content="經濟 經濟 經濟")] * 3) == ()
    # Japanese: the 2- and 3-character ends and starts of runs at gaps, counted at each of
    # the three gaps: から, 府から and 経済 twice an article (ends of 政府から, starts of
    # 経済成長 and 経済), the others once; ties in code point order.
    ja = [doc(content="政府から、経済成長 政府から 経済")] * 2
    assert choose_pair_words("ja", ja) == (
        "から",
        "府から",
        "経済",
        "成長",
        "政府",
        "政府か",
        "済成長",
        "経済成",
    )
    monkeypatch.setattr(pair_words, "MIN_PER_ARTICLE", 2.0)
    assert choose_pair_words("ja", ja) == ("から", "府から", "経済")
    monkeypatch.setattr(pair_words, "MIN_PER_ARTICLE", 1.0)
    # Runs as typed, counted whole: 경제 3 times in 3 articles, 시장 and 서울 twice.
    ko = [doc(content="경제 경제 시장"), doc(content="경제 시장 서울"), doc(content="경제가 서울")]
    assert choose_pair_words("ko", ko) == ("경제",)
    assert meta_of(build_index("ko", ko))["pair_words"] == ["경제"]


def meta_of(files: dict[str, bytes]) -> dict:
    return orjson.loads(files["search.meta"])


def test_the_index_records_its_list_and_queries_pair_only_its_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pair_words, "MIN_PER_ARTICLE", 1.0)
    # "govern elect" twice in every article: both are chosen; "zebra", in every other
    # article (half a time an article), is not.
    docs = [doc(content=f"govern elect govern elect {'zebra' * (i % 2)}") for i in range(20)]
    s = searcher_for("en", docs)
    assert {"govern", "elect"} <= set(s.analyzer.pair_words)
    assert "zebra" not in s.analyzer.pair_words
    recorded = meta_of(build_index("en", docs))["pair_words"]
    assert tuple(recorded) == s.analyzer.pair_words
    # A given list is used as given, whatever the documents would choose.
    given_list = ("zebra", "violin")
    t = searcher_for("en", docs, given_list)
    assert t.analyzer.pair_words == given_list
    assert hits(t, '"govern elect"') == hits(s, '"govern elect"') == set(range(20))
    assert hits(t, '"elect zebra"') == hits(s, '"elect zebra"') == set(range(1, 20, 2))
    assert hits(t, '"zebra govern"') == hits(s, '"zebra govern"') == set()


@pytest.mark.parametrize("bad", [["the", "the"], "the of", [1, 2], None, [["nested"]]])
def test_a_bad_pair_word_list_is_refused(bad: object) -> None:
    files = build_index("en", [doc(content="the of the")])
    meta = orjson.loads(files["search.meta"])
    meta["pair_words"] = bad
    files["search.meta"] = orjson.dumps(meta)
    with pytest.raises(ValueError, match=r"pair words|incomplete meta"):
        Searcher("en", {name: memoryview(data) for name, data in files.items()})


@given(count=st.integers(0, 10_000), size=st.integers(1, 3000))
def test_the_sample_is_evenly_spread_and_distinct(count: int, size: int) -> None:
    got = pair_words.sample(count, size)
    assert len(got) == min(count, size)
    assert got == sorted(set(got)) and all(0 <= i < count for i in got)
    if count > size and size > 1:
        gaps = np.diff(got)
        assert gaps.max() - gaps.min() <= 1
