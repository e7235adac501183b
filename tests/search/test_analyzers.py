"""Analyser unit tests, one group per language family and language."""

from __future__ import annotations

import unicodedata

import pytest

from app import versions
from app.search.analyzers import (
    SUPPORTED,
    bigram_key,
    get_analyzer,
    nfkc,
    normalize,
    trigram_key,
)
from app.search.zh_fold import ZH_FOLD


def words(language: str, text: str) -> tuple[str, ...]:
    return get_analyzer(language).analyze_query(text).words


def test_every_service_language_has_an_analyser() -> None:
    assert {"ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it"} == SUPPORTED
    with pytest.raises(ValueError):
        get_analyzer("xx")


@pytest.mark.parametrize(
    "text",
    ["（ＧＤＰ）７～９月期", "ｶﾞｲﾄﾞ", "e\u0301cole", "ﬁnance ①", "Ⅻ ㍻ ＡＢＣ", "가\u11a8", "plain"],
)
def test_fast_nfkc_equals_unicodedata(text: str) -> None:
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_normalize_case_folds() -> None:
    assert normalize("Straße ÉCOLE") == "strasse école"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("elections", ("elect",)),
        ("Election", ("elect",)),
        ("reported reporting", ("report",)),
        ("The U.S. economy", ("the", "u", "s", "economi")),
        ("e-mail_address", ("e", "mail", "address")),
    ],
)
def test_english(query: str, expected: tuple[str, ...]) -> None:
    assert words("en", query) == expected


def test_french_accents_elision_and_plurals() -> None:
    assert words("fr", "l'économie") == words("fr", "L’ECONOMIE") == ("l", "econom")
    assert words("fr", "élections") == words("fr", "election")
    assert words("fr", "huîtres") == words("fr", "huitre")


def test_german_umlauts_eszett_and_plurals() -> None:
    assert words("de", "Brücken") == words("de", "brucke")
    assert words("de", "Straße") == words("de", "STRASSE")
    assert words("de", "Wahlen") == words("de", "Wahl")


def test_spanish_and_italian() -> None:
    assert words("es", "elección") == words("es", "elecciones") == words("es", "ELECCION")
    assert words("es", "récord") == words("es", "record")
    assert words("it", "città") == words("it", "citta")
    assert words("it", "elezioni") == words("it", "elezione")


def test_letters_without_decomposition_are_folded() -> None:
    assert words("de", "Øresund") == words("de", "oresund")
    assert words("fr", "œuvre") == words("fr", "oeuvre")


def test_punctuation_only_is_empty() -> None:
    for language in SUPPORTED:
        assert get_analyzer(language).analyze_query("!!! … — 、。「」").empty


def test_japanese_bigrams_phrases_and_unigrams() -> None:
    terms = get_analyzer("ja").analyze_query("日本経済")
    assert terms.bigrams == (
        bigram_key("日", "本"),
        bigram_key("本", "経"),
        bigram_key("経", "済"),
    )
    assert terms.trigrams == (trigram_key("日", "本", "経"), trigram_key("本", "経", "済"))
    # 4+ characters: also proven from the positions of trigrams covering the run.
    assert terms.phrases == (((trigram_key(*"日本経"), 0), (trigram_key(*"本経済"), 1)),)
    seven = get_analyzer("ja").analyze_query("インターネット").phrases
    assert seven == (
        ((trigram_key(*"インタ"), 0), (trigram_key(*"ーネッ"), 3), (trigram_key(*"ネット"), 4)),
    )
    single = get_analyzer("ja").analyze_query("秋")
    assert single.unigrams == (ord("秋"),) and not single.bigrams and not single.phrases
    two = get_analyzer("ja").analyze_query("経済")
    assert two.bigrams == (bigram_key("経", "済"),) and not two.trigrams and not two.phrases
    three = get_analyzer("ja").analyze_query("半導体")
    assert three.trigrams == (trigram_key("半", "導", "体"),) and not three.phrases


def test_japanese_keeps_voicing_and_widens_half_width_kana() -> None:
    assert get_analyzer("ja").analyze_query("ｶﾞｲﾄﾞ").trigrams == (trigram_key(*"ガイド"),)
    assert (
        get_analyzer("ja").analyze_query("ガイド").bigrams
        != get_analyzer("ja").analyze_query("カイト").bigrams
    )


def test_ngram_keys_sort_like_their_strings() -> None:
    runs = sorted(["経済", "日本", "한국", "ab", "𠀋経"])
    assert sorted(runs, key=lambda r: bigram_key(*r)) == runs
    triples = sorted(["経済学", "日本経", "한국어", "𠀋経済", "本経済"])
    assert sorted(triples, key=lambda r: trigram_key(*r)) == triples


def test_japanese_latin_words_inside_cjk_text() -> None:
    terms = get_analyzer("ja").analyze_query("ＧＤＰ速報")
    assert terms.words == ("gdp",)
    assert terms.bigrams == (bigram_key("速", "報"),)


def test_korean_words_are_separate_runs() -> None:
    terms = get_analyzer("ko").analyze_query("경제 성장")
    assert terms.bigrams == (bigram_key("경", "제"), bigram_key("성", "장"))
    assert not terms.trigrams and not terms.phrases


def test_korean_particle_query_keeps_its_particle() -> None:
    terms = get_analyzer("ko").analyze_query("경제가")
    assert terms.trigrams == (trigram_key(*"경제가"),)


@pytest.mark.parametrize("language", ["zh_cn", "zh_tw"])
def test_chinese_folds_traditional_to_simplified(language: str) -> None:
    analyzer = get_analyzer(language)
    assert analyzer.analyze_query("經濟發展") == analyzer.analyze_query("经济发展")
    assert analyzer.analyze_query("臺灣").bigrams == (bigram_key("台", "湾"),)
    assert analyzer.analyze_query("臺灣經濟").phrases == analyzer.analyze_query("台湾经济").phrases
    assert analyzer.analyze_query("臺灣經濟").trigrams == (
        trigram_key(*"台湾经"),
        trigram_key(*"湾经济"),
    )


def test_japanese_and_korean_do_not_fold_chinese_scripts() -> None:
    ja = get_analyzer("ja")
    assert ja.analyze_query("經濟") != ja.analyze_query("经济")


def test_chinese_table_is_idempotent_and_from_opencc() -> None:
    assert all(target not in ZH_FOLD for target in ZH_FOLD.values())
    assert chr(ZH_FOLD[ord("發")]) == "发" and chr(ZH_FOLD[ord("貓")]) == "猫"
    assert versions.SEARCH_ANALYZER_VERSION.startswith("6.")


def test_chinese_table_matches_opencc() -> None:
    from app.search.zh_tables import T2S
    from scripts.dev import gen_zh_fold as gen

    table = gen.derive_table()
    assert {src: table[src] for src in sorted(table)} == T2S
    assert list(T2S) == sorted(T2S)
