"""Hypothesis properties: title words and CJK substrings find their article; case and accents
in a Latin-script query change nothing."""

from __future__ import annotations

import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.search.analyzers import LATIN_STEMMERS
from tests.search.conftest import doc, searcher_for

LATIN_LETTERS = "abcdefghijklmnopqrstuvwxyzàâäçéèêëîïôöùûüÿñáíóúìòßœæø"
latin_word = st.text(alphabet=LATIN_LETTERS, min_size=1, max_size=12)
# Hiragana, katakana, common kanji and Hangul syllables.
CJK_CHARS = (
    [chr(c) for c in range(0x3041, 0x3097)]
    + [chr(c) for c in range(0x30A1, 0x30FB)]
    + [chr(c) for c in range(0x4E00, 0x4E00 + 400)]
    + [chr(c) for c in range(0xAC00, 0xAC00 + 400)]
)
cjk_text = st.text(alphabet=CJK_CHARS, min_size=1, max_size=20)
FILLER = [doc("unrelated filler", "nothing here", "plain words only"), doc("其他", "", "無関係")]
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def strip_accents(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


@PROPERTY
@given(
    language=st.sampled_from(sorted(LATIN_STEMMERS)),
    title=st.lists(latin_word, min_size=1, max_size=6),
    pick=st.integers(min_value=0),
)
def test_any_title_word_finds_its_article(language: str, title: list[str], pick: int) -> None:
    searcher = searcher_for(language, [*FILLER, doc(" ".join(title), "summary", "body")])
    total, positions = searcher.search(title[pick % len(title)], 0, 10)
    assert len(FILLER) in positions and total >= 1


@PROPERTY
@given(
    language=st.sampled_from(["ja", "ko", "zh_cn", "zh_tw"]),
    title=cjk_text,
    bounds=st.tuples(st.integers(min_value=0), st.integers(min_value=1)),
)
def test_any_cjk_title_substring_finds_its_article(
    language: str, title: str, bounds: tuple[int, int]
) -> None:
    start = bounds[0] % len(title)
    end = start + 1 + (bounds[1] % (len(title) - start))
    searcher = searcher_for(language, [*FILLER, doc(title, "", "")])
    total, positions = searcher.search(title[start:end], 0, 10)
    assert len(FILLER) in positions and total >= 1


@PROPERTY
@given(
    language=st.sampled_from(sorted(LATIN_STEMMERS)),
    # "or" in capitals is the OR operator (api.md §7): upper-casing it changes the query.
    words=st.lists(
        latin_word.filter(lambda w: strip_accents(w).upper() != "OR"), min_size=1, max_size=4
    ),
    body=st.lists(latin_word, min_size=0, max_size=20),
)
def test_case_and_accents_change_nothing(language: str, words: list[str], body: list[str]) -> None:
    docs = [doc(" ".join(words), "", " ".join(body)), doc("", "", " ".join(body)), *FILLER]
    searcher = searcher_for(language, docs)
    query = " ".join(words)
    expected = searcher.search(query, 0, 10)
    assert expected[0] >= 1
    for variant in (
        query.upper(),
        query.title(),
        strip_accents(query),
        strip_accents(query).upper(),
    ):
        assert searcher.search(variant, 0, 10) == expected, variant


@PROPERTY
@given(title=cjk_text)
def test_scattered_characters_do_not_match_a_sequence(title: str) -> None:
    # The reversed title holds the same characters (and bigrams of length-2 runs reversed);
    # a 3+ character query must match only where the exact sequence occurs.
    query = title[:3]
    searcher = searcher_for("ja", [doc("".join(reversed(query)) + "。" + query[::-1], "", "")])
    total, _ = searcher.search(query, 0, 10)
    assert total == (1 if query in query[::-1] + "。" + query[::-1] else 0)
