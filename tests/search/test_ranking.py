"""Ranking, pagination, bounded cost and index validation."""

from __future__ import annotations

import pytest

from app import versions
from app.search import layout
from app.search.indexer import build_index
from app.search.searcher import Searcher
from tests.search.conftest import doc, searcher_for


def test_title_match_beats_body_only_matches() -> None:
    body_heavy = doc("Weather", "", "budget " * 50)
    title_hit = doc("Budget vote", "", "A long article about something else entirely. " * 20)
    searcher = searcher_for("en", [body_heavy, title_hit])
    assert searcher.search("budget", 0, 10) == (2, [1, 0])


def test_more_query_terms_in_title_rank_higher() -> None:
    one = doc("Budget", "", "vote vote")
    two = doc("Budget vote", "", "")
    assert searcher_for("en", [one, two]).search("budget vote", 0, 10) == (2, [1, 0])


def test_ties_are_broken_by_position() -> None:
    docs = [doc("same title", "", "same body") for _ in range(5)]
    assert searcher_for("en", docs).search("title", 0, 10) == (5, [0, 1, 2, 3, 4])


def test_bm25_prefers_higher_frequency_and_a_tag_over_one_body_mention() -> None:
    # Bodies of a typical length (the reference length), so only the matches differ.
    filler = " ".join(f"w{i}" for i in range(497))
    searcher = searcher_for(
        "en",
        [
            doc("a", "", f"solar {filler}"),
            doc("b", "", f"solar solar solar {filler}"),
            doc("c", "", f"x {filler}", ["solar"]),
        ],
    )
    assert searcher.search("solar", 0, 10) == (3, [1, 2, 0])


def test_shorter_fields_weigh_a_match_more() -> None:
    short = doc("a", "", "solar power")
    long = doc("b", "", "solar " + " ".join(f"w{i}" for i in range(2000)))
    assert searcher_for("en", [long, short]).search("solar", 0, 10) == (2, [1, 0])


def test_pagination_and_huge_offsets() -> None:
    docs = [doc(f"item {i}", "", "common") for i in range(30)]
    searcher = searcher_for("en", docs)
    total, first = searcher.search("common", 0, 20)
    _, second = searcher.search("common", 20, 20)
    assert total == 30 and len(first) == 20 and len(second) == 10
    assert sorted(first + second) == list(range(30))
    assert searcher.search("common", 10**12, 20) == (30, [])


def test_and_semantics_and_no_match() -> None:
    searcher = searcher_for("en", [doc("alpha beta"), doc("alpha"), doc("beta")])
    assert searcher.search("alpha beta", 0, 10) == (1, [0])
    assert searcher.search("alpha gamma", 0, 10) == (0, [])
    assert searcher.search("?!", 0, 10) == (0, [])


def test_cjk_sequence_must_be_contiguous() -> None:
    searcher = searcher_for("ja", [doc("日本の経済"), doc("日本経済新聞"), doc("経済日本")])
    assert searcher.search("日本経済", 0, 10) == (1, [1])
    assert searcher.search("経済", 0, 10)[0] == 3


def test_long_cjk_run_needs_its_trigrams_adjacent() -> None:
    # Doc 0 holds every trigram of 東京大学 (東京大, 京大学) but never the run itself; doc 2
    # holds it only across a field boundary; doc 3 only after the 65,536th character.
    searcher = searcher_for(
        "ja",
        [
            doc("東京大会と京大学生"),
            doc("東京大学の研究"),
            doc("東京大", "京大学"),
            doc("", "", "あ" * 70_000 + "東京大学"),
        ],
    )
    assert searcher.search("東京大学", 0, 10) == (2, [1, 3])
    assert searcher.search("東京大", 0, 10)[0] == 4
    assert searcher.search("京大学", 0, 10)[0] == 4
    assert searcher.search("東京大学の研究", 0, 10) == (1, [1])


def test_cjk_runs_do_not_join_across_fields_or_punctuation() -> None:
    searcher = searcher_for("zh_cn", [doc("上海", "马拉松"), doc("上海。马拉松")])
    assert searcher.search("海马", 0, 10) == (0, [])
    assert searcher.search("上海 马拉松", 0, 10)[0] == 2


def test_empty_index() -> None:
    for language in ("en", "ja"):
        assert searcher_for(language, []).search("anything 経済", 0, 10) == (0, [])


def test_build_is_deterministic() -> None:
    docs = [doc("Élections 経済", "résumé", "body text 日本経済", ["tag"]) for _ in range(3)]
    assert build_index("ja", docs) == build_index("ja", docs)
    assert all(name.startswith("search.") for name in build_index("ja", docs))


def test_common_terms_and_long_queries_cost_their_distinct_postings_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bounded cost, asserted as work rather than time (latency is in docs/benchmarks.md):
    a query's repeated terms are merged, so a 200-character query costs what its distinct
    terms cost; a long CJK run is proven on the candidates only; punctuation reads no
    postings."""
    docs = [doc(f"news {i}", "the report", "the of and to in a " * 40) for i in range(3000)]
    docs += [doc("日本経済", "経済" * 100) for _ in range(100)] + [doc("経済" * 99)]
    searcher = searcher_for("en", docs)
    ranges_seen: list[list[tuple[int, int]]] = []
    phrase_candidates: list[int] = []
    intersect, phrase_mask = Searcher._intersect, Searcher._phrase_mask

    def record_intersect(self, ranges, filters):  # type: ignore[no-untyped-def]
        ranges_seen.append([*ranges, *filters])
        return intersect(self, ranges, filters)

    def record_phrase(self, cand, covers):  # type: ignore[no-untyped-def]
        phrase_candidates.append(int(cand.size))
        return phrase_mask(self, cand, covers)

    monkeypatch.setattr(Searcher, "_intersect", record_intersect)
    monkeypatch.setattr(Searcher, "_phrase_mask", record_phrase)

    total, rows = searcher.search("the of and to in a report", 0, 20)
    assert total == 3000 and len(rows) == 20
    assert len(ranges_seen.pop()) == 7
    assert searcher.search(("the " * 50).strip()[:200], 0, 20)[0] == 3000
    assert len(ranges_seen.pop()) == 1
    assert searcher.search(("経済" * 100)[:200], 0, 20)[0] == 100
    assert len(ranges_seen.pop()) == 4  # bigrams 経済 and 済経, trigrams 経済経 and 済経済
    assert phrase_candidates == [101]  # the 100 matches and the 99-fold one, of 3,101 docs
    assert searcher.search("!!! … — 、。" * 10, 0, 20) == (0, [])
    assert not ranges_seen


def _files(language: str = "en", text: str = "hello world") -> dict[str, memoryview]:
    files = build_index(language, [doc(text)])
    return {name: memoryview(data) for name, data in files.items()}


def test_searcher_rejects_inconsistent_files() -> None:
    files = _files()
    Searcher("en", files)
    with pytest.raises(ValueError, match="built for language"):
        Searcher("fr", files)
    missing = dict(files)
    del missing[layout.DOCS]
    with pytest.raises(ValueError, match="missing"):
        Searcher("en", missing)
    truncated = dict(files)
    truncated[layout.SCORES] = files[layout.SCORES][:-4]
    with pytest.raises(ValueError, match=layout.SCORES):
        Searcher("en", truncated)
    cjk = _files("ja", "日本経済新聞")
    for name in (layout.TRIDOCS, layout.TRICOUNT, layout.TRIPBASE, layout.TRIPOS):
        with pytest.raises(ValueError, match=name):
            Searcher("ja", {**cjk, name: cjk[name][:-1]})
    meta = bytes(files[layout.META])
    for broken_meta in (
        meta.replace(f'"format":{versions.SEARCH_INDEX_FORMAT_VERSION}'.encode(), b'"format":999'),
        meta.replace(b'"analyzer":"', b'"analyzer":"old'),
    ):
        assert broken_meta != meta
        with pytest.raises(ValueError, match=r"format|analyser"):
            Searcher("en", {**files, layout.META: memoryview(broken_meta)})
    garbage = dict(files)
    garbage[layout.META] = memoryview(b"not json")
    with pytest.raises(ValueError, match="meta"):
        Searcher("en", garbage)
