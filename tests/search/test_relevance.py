"""Relevance suite over the sample corpus (data/sample/<lang>.jsonl), table-driven.

Each case: a query, ids that must be found, ids that must not, and optional ranking pairs
(the first id must rank above the second). Expectations were chosen by reading the articles.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from app.search.searcher import Searcher
from tests.search.conftest import searcher_for
from tests.search.corpus import Article, load_jsonl

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


@dataclass(frozen=True)
class Case:
    query: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    above: tuple[tuple[str, str], ...] = ()
    total: int | None = None
    note: str = ""


CASES: dict[str, list[Case]] = {
    "en": [
        Case(
            "elections",
            ("en-2026-11-midterm-election-turnout", "en-2026-10-paris-elections-security"),
            note="plural finds singular",
        ),
        Case(
            "election",
            ("en-2026-10-paris-elections-security", "en-2026-10-mortgage-costs-fall"),
            above=(
                ("en-2026-11-midterm-election-turnout", "en-2026-10-mortgage-costs-fall"),
                ("en-2026-10-paris-elections-security", "en-2026-10-mortgage-costs-fall"),
            ),
            note="title beats body",
        ),
        Case("reported", ("en-2026-11-central-bank-rates",), note="verb form finds 'report'"),
        Case(
            "RATES",
            ("en-2026-11-central-bank-rates", "en-2026-10-mortgage-costs-fall"),
            exclude=("en-2026-11-nasa-europa-clipper",),
            note="case; 'rate' is not 'moderate'",
        ),
        Case("inflation eases", ("en-2026-11-central-bank-rates",), total=1, note="AND"),
        Case("robots sidewalk", ("en 2026-11 delivery robots",), total=1),
        Case("eurozone", ("en-2026-11-ecb-paris-forum-rates",), total=1, note="tag-only"),
        Case(
            "Paris",
            ("en-2026-11-psg-late-winner", "en-2026-11-ecb-paris-forum-rates"),
            exclude=("en-2026-11-nasa-europa-clipper",),
        ),
        Case("zzzz", total=0, note="no match"),
        Case("!!! ...", total=0, note="punctuation only"),
    ],
    "fr": [
        Case(
            "economie", ("économie 2026-11-03", "fr-2026-11-prix-energie-baisse"), note="no accent"
        ),
        Case(
            "election",
            (
                "fr-2026-11-elections-mi-mandat-usa",
                "fr-2026-10-élection-municipale-partielle",
                "fr-2026-11-budget-assemblee",
            ),
            above=(("fr-2026-10-élection-municipale-partielle", "fr-2026-11-budget-assemblee"),),
            note="singular finds plural; title beats body",
        ),
        Case("ÉLECTIONS", ("fr-2026-10-élection-municipale-partielle",), note="case and accents"),
        Case("huitres", ("fr-2026-10-ostreiculteurs-bretagne",), total=1, note="î folded"),
        Case("lancements", ("fr-2026-11-ariane-6-lancement",), note="plural finds singular"),
        Case("ostreiculteurs Bretagne", ("fr-2026-10-ostreiculteurs-bretagne",), total=1),
        Case("fiscalite", ("fr-2026-11-budget-assemblee",), total=1, note="tag-only"),
        Case(
            "Marseille hydrogene",
            ("fr-2026-10-port-marseille-hydrogene",),
            total=1,
            exclude=("fr-2026-11-om-psg-classique",),
            note="AND",
        ),
        Case("xylophone", total=0),
    ],
    "de": [
        Case("Brucken", ("de-2026-10-brücken-sanierung",), total=1, note="ü typed as u"),
        Case("Brücke", ("de-2026-10-brücken-sanierung",), note="singular finds plural"),
        Case(
            "wahlen",
            ("de-2026-10-koalition-nach-der-wahl", "de-2026-11-wahlrecht-debatte"),
            above=(("de-2026-10-koalition-nach-der-wahl", "de-2026-11-wahlrecht-debatte"),),
        ),
        Case("Strasse", ("de-2026-10-brücken-sanierung",), note="ß typed as ss"),
        Case("FLÜCHTLINGE", ("de-2026-11-fluechtlinge-kommunen",), total=1),
        Case("Gluhwein", ("de 2026-11 Weihnachtsmärkte",), total=1),
        Case("Inflation Oktober", ("de-2026-11-inflation-oktober",), total=1, note="AND"),
        Case("Kernfusion", ("de-2026-11-wendelstein-rekord",), total=1, note="tag-only"),
        Case("quatsch", total=0),
    ],
    "es": [
        Case(
            "eleccion",
            ("es-2026-11-gobierno-descarta-adelanto", "es-2026-10-brasil-segunda-vuelta"),
            above=(("es-2026-11-gobierno-descarta-adelanto", "es-2026-10-brasil-segunda-vuelta"),),
            note="no accent, singular finds plural",
        ),
        Case("elecciones", ("es-2026-10-brasil-segunda-vuelta",), note="plural finds singular"),
        Case(
            "record",
            ("es-2026-11-maraton-san-sebastian", "es-2026-10-alquiler-madrid"),
            note="récord without accent",
        ),
        Case("FUTBOL", ("es-2026-11-clasico-bernabeu",), total=1),
        Case("Renfe", ("España 2026-11 tren alta velocidad",), total=1, note="tag-only"),
        Case(
            "vivienda alquiler",
            ("es-2026-10-alquiler-madrid",),
            exclude=("es-2026-11-clasico-bernabeu",),
            note="AND",
        ),
        Case("sequia", ("es-2026-10-olivos-sequia",), total=1),
        Case("xilofono", total=0),
    ],
    "it": [
        Case(
            "elezione",
            ("it-2026-11-suppletive-napoli", "it-2026-11-legge-elettorale"),
            note="singular finds plural",
        ),
        Case("elezioni", ("it-2026-11-suppletive-napoli",), note="plural finds singular"),
        Case("citta", ("it 2026-11 città pendolari", "it-2026-10-venezia-ticket"), note="à folded"),
        Case(
            "ECONOMIA",
            ("it-2026-10-pil-terzo-trimestre",),
            above=(("it-2026-10-pil-terzo-trimestre", "it-2026-11-bollette-energia"),),
        ),
        Case("INGV", ("it-2026-11-etna-eruzione",), total=1, note="tag-only"),
        Case("treni ritardo", ("it 2026-11 città pendolari",), total=1, note="AND"),
        Case("vulcano", ("it-2026-11-etna-eruzione",), total=1),
        Case("xilofono", total=0),
    ],
    "ja": [
        Case(
            "経済",
            ("ja-2026-11-gdp-preliminary", "ja-2026-10-boj-rate-hike"),
            note="inside 日本経済は",
        ),
        Case("日本経済", ("ja-2026-11-gdp-preliminary",), total=1),
        Case("経済日本", total=0, note="characters present, sequence absent"),
        Case("秋", ("ja-2026-11-nikko-autumn-leaves",), total=1, note="single character"),
        Case("インバウンド", ("ja-2026-11-osaka-visitors",), total=1, note="tag-only katakana"),
        Case("ｇｄｐ", ("ja-2026-11-gdp-preliminary",), total=1, note="full-width, NFKC"),
        Case(
            "大阪",
            ("ja-2026-11-osaka-visitors", "ja-2026-11-osaka-univ-heart-sheet"),
            above=(("ja-2026-11-osaka-visitors", "ja-2026-11-osaka-univ-heart-sheet"),),
        ),
        Case("消費 物価", ("ja-2026-11-gdp-preliminary",), exclude=("ja-2026-11-h3-launch",)),
        Case("翡翠", ("ja-2026-11-糸魚川-翡翠",), total=1),
        Case("台風", ("ja-2026-11-糸魚川-翡翠",), total=1),
        Case("地震", total=0),
    ],
    "ko": [
        Case(
            "경제",
            ("경제-2026-001", "ko-2026-11-semiconductor-exports"),
            note="finds 경제가 and 경제를",
        ),
        Case("경제가", ("경제-2026-001",), exclude=("ko-2026-11-semiconductor-exports",)),
        Case("금리", ("경제-2026-001",), total=1),
        Case("겨울나기", ("ko-2026-11-kimjang-cost",), total=1, note="tag-only"),
        Case("김장 배추", ("ko-2026-11-kimjang-cost",), total=1, note="AND"),
        Case("반도체", ("ko-2026-11-semiconductor-exports",), total=1),
        Case("우주", ("ko 2026-10 누리호 5차 발사",), total=1),
        Case("한국은행", ("경제-2026-001",), total=1),
        Case("쌀", total=0, note="single character, no match"),
    ],
    "zh_cn": [
        Case(
            "经济",
            ("zh-cn-2026-10-q3-economy", "zh-cn-2026-11-ev-exports"),
            above=(("zh-cn-2026-10-q3-economy", "zh-cn-2026-11-ev-exports"),),
        ),
        Case("經濟", ("zh-cn-2026-10-q3-economy",), note="traditional query, simplified text"),
        Case("穩增長", ("zh-cn-2026-10-q3-economy",), total=1, note="traditional, tag-only"),
        Case("茶", ("zh-cn-2026-11-wuyi-autumn-tea",), total=1, note="single character"),
        Case("熊猫", ("zh-cn 2026-11 熊猫双胞胎",), total=1),
        Case("上海 马拉松", ("zh-cn-2026-11-shanghai-marathon",), total=1, note="AND"),
        Case("芯片", ("zh-cn-2026-11-chip-supply-chain",), total=1),
        Case("经济上海", total=0, note="sequence absent"),
    ],
    "zh_tw": [
        Case(
            "经济",
            ("zh-tw-2026-10-china-q3-economy", "zh-tw-2026-11-ev-exports"),
            above=(("zh-tw-2026-10-china-q3-economy", "zh-tw-2026-11-ev-exports"),),
            note="simplified query, traditional text",
        ),
        Case("經濟", ("zh-tw-2026-10-china-q3-economy",)),
        Case("猫熊", ("zh-tw 2026-11 貓熊雙胞胎",), total=1, note="simplified 猫 finds 貓"),
        Case("电动汽车", ("zh-tw-2026-11-ev-exports", "電動汽車-充電-2026-11")),
        Case("车企出海", ("zh-tw-2026-11-ev-exports",), total=1, note="simplified, tag-only"),
        Case("茶", ("zh-tw-2026-11-wuyi-autumn-tea",), total=1, note="single character"),
        Case("晶片", ("zh-tw-2026-11-advanced-packaging",), total=1),
        Case("台北", total=0),
    ],
}


@cache
def _corpus(language: str) -> tuple[list[Article], Searcher]:
    path = SAMPLE / f"{language}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present")
    articles = load_jsonl(path)
    return articles, searcher_for(language, [a.index_doc() for a in articles])


PARAMS = [
    pytest.param(lang, case, id=f"{lang}:{case.query}")
    for lang, cases in CASES.items()
    for case in cases
]


@pytest.mark.parametrize(("language", "case"), PARAMS)
def test_relevance(language: str, case: Case) -> None:
    articles, searcher = _corpus(language)
    ids = {a.id for a in articles}
    for wanted in (*case.include, *case.exclude, *(x for pair in case.above for x in pair)):
        assert wanted in ids, f"case refers to unknown id {wanted!r}"
    total, positions = searcher.search(case.query, 0, 100)
    found = [articles[p].id for p in positions]
    assert total == len(found)
    for wanted in case.include:
        assert wanted in found, f"{case.query!r} ({case.note}) should find {wanted}: {found}"
    for unwanted in case.exclude:
        assert unwanted not in found, f"{case.query!r} should not find {unwanted}: {found}"
    if case.total is not None:
        assert total == case.total, f"{case.query!r}: {found}"
    for higher, lower in case.above:
        assert found.index(higher) < found.index(lower), f"{case.query!r}: {found}"


@pytest.mark.parametrize("language", sorted(CASES))
def test_at_least_eight_queries_per_language(language: str) -> None:
    assert len(CASES[language]) >= 8
