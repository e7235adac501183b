"""A handful of candidates is probed, scored and proven one document at a time
(app/search/searcher.py, `_FEW`); more go through numpy, which scores a large share of the
documents from a table of them all (`_DENSE`) and fewer by binary search. Every way must
give the same matches and the same score bits: every query here is answered one document at
a time (`_FEW` huge), and through numpy with the table always and never used (`_FEW = 0`,
`_DENSE` huge or 0), and the answers are compared array for array, on random corpora with
deleted documents, plain queries, phrases, OR groups and exclusions."""

from __future__ import annotations

import random
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.search import searcher as searcher_module
from app.search.query import compile_query
from app.search.searcher import DELETED, Searcher, Segment, scored_matches
from tests.search.conftest import doc, searcher_for

VOCAB = {
    "en": ["alpha", "beta", "gamma", "delta", "news", "report", "vote", "votes", "the", "of"],
    "ja": [*"経済日本新聞市場政府大統領乎一", "経済市場", "日本政府"],
    "zh_cn": [*"经济日本新闻市场政府", "经济市场"],
    "ko": ["기후", "변화", "변화가", "경제", "시장", "서울", "선거"],
}
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def few(limit: int) -> Any:
    """The one-at-a-time paths below `limit` candidates only (0: never)."""
    return patch.object(searcher_module, "_FEW", limit)


def text(rng: random.Random, language: str, n: int) -> str:
    joiner = " " if language in ("en", "ko") or rng.random() < 0.3 else ""
    return joiner.join(rng.choice(VOCAB[language]) for _ in range(n))


def query(rng: random.Random, language: str) -> str:
    """A plain query, a quoted phrase, an OR group or an exclusion of the corpus's words."""
    words = [text(rng, language, rng.randint(1, 4)) for _ in range(rng.randint(1, 3))]
    shape = rng.choice(["plain", "plain", "phrase", "or", "not"])
    if shape == "phrase":
        return f'"{" ".join(words)}"'
    if shape == "or" and len(words) > 1:
        return " OR ".join(words)
    if shape == "not" and len(words) > 1:
        return f"{words[0]} -{words[1]}"
    return " ".join(words)


def answer(
    segment: Segment, q: str, limit: int, dense: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with few(limit), patch.object(searcher_module, "_DENSE", dense):
        pos, acc, titles = scored_matches([segment], compile_query(q, segment.index.analyzer))
    order = np.argsort(pos, kind="stable")
    return pos[order], acc[order].view(np.int64), titles[order]  # the float64 bits


def segment_of(s: Searcher, deleted: list[int]) -> Segment:
    positions = np.arange(s.ndocs, dtype=np.uint32)
    positions[deleted] = DELETED
    return Segment(s, positions, np.array(sorted(deleted), dtype=np.int64))


@PROPERTY
@given(
    language=st.sampled_from(sorted(VOCAB)),
    seed=st.integers(0, 2**32),
    ndocs=st.integers(1, 40),
)
def test_one_at_a_time_and_both_numpy_ways_give_the_same_bits(
    language: str, seed: int, ndocs: int
) -> None:
    rng = random.Random(seed)
    docs = [
        doc(text(rng, language, rng.randint(1, 5)), text(rng, language, rng.randint(0, 12)))
        for _ in range(ndocs)
    ]
    s = searcher_for(language, docs)
    deleted = rng.sample(range(ndocs), rng.randint(0, ndocs // 3))
    segment = segment_of(s, deleted)
    for _ in range(12):
        q = query(rng, language)
        one_at_a_time = answer(segment, q, 10**9)
        for numpy_way in (answer(segment, q, 0, 0), answer(segment, q, 0, 10**9)):
            for a, b in zip(numpy_way, one_at_a_time, strict=True):
                assert np.array_equal(a, b), q


def test_a_long_cjk_query_takes_the_one_at_a_time_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # A long run leaves one candidate after its rarest trigram: the remaining trigram and
    # bigram ranges are probed, its terms scored and its run proven one document at a time.
    rng = random.Random(5)
    docs = [doc(text(rng, "ja", 6), text(rng, "ja", 20)) for _ in range(60)]
    docs.append(doc("日本政府経済市場新聞", "大統領"))
    s = searcher_for("ja", docs)
    called: list[str] = []
    for name in ("_score_few", "_phrase_mask_few"):
        method = getattr(Searcher, name)
        monkeypatch.setattr(
            Searcher, name, lambda self, *a, _m=method, _n=name: called.append(_n) or _m(self, *a)
        )
    held = searcher_module._held_few
    monkeypatch.setattr(
        searcher_module, "_held_few", lambda *a: called.append("_held_few") or held(*a)
    )
    segment = segment_of(s, [])
    pos, _, _ = scored_matches([segment], compile_query("日本政府経済市場新聞", s.analyzer))
    assert pos.tolist() == [60]
    assert {"_held_few", "_score_few", "_phrase_mask_few"} <= set(called)
    with few(0):
        called.clear()
        again = scored_matches([segment], compile_query("日本政府経済市場新聞", s.analyzer))
        assert again[0].tolist() == [60] and not called
