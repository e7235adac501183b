"""Highlights (docs/search.md "Highlights"): the same analysis as the index decides what is
marked, in every language; the output is escaped text of the article with marks only.

The properties check every snippet against an oracle written here: with the marks removed
and the text unescaped it is a piece of the summary or content of at most 240 characters,
every marked piece analyses to a query term, and no unmarked word does."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.search.analyzers import get_analyzer
from app.search.highlight import SNIPPET_CHARS, Highlighter
from app.search.query import compile_query

MARK_RE = re.compile(r"<mark>(.*?)</mark>", re.S)


def marker(language: str, q: str) -> Highlighter:
    analyzer = get_analyzer(language)
    return Highlighter(analyzer, compile_query(q, analyzer).positive_texts)


def title(language: str, q: str, text: str) -> str:
    return marker(language, q).highlight({"id": "x", "title": text, "summary": "", "content": ""})[
        "title"
    ]


def plain(marked: str) -> str:
    return html.unescape(marked.replace("<mark>", "").replace("</mark>", ""))


def marked_pieces(marked: str) -> list[str]:
    return [html.unescape(piece) for piece in MARK_RE.findall(marked)]


@pytest.mark.parametrize(
    ("language", "q", "text", "expected"),
    [
        ("en", "elections", "Midterm Election Results", "Midterm <mark>Election</mark> Results"),
        ("en", "rising", "Prices rise again", "Prices <mark>rise</mark> again"),
        ("fr", "economie", "L'économie ralentit", "L&#x27;<mark>économie</mark> ralentit"),
        ("de", "strasse", "Die Straße ist frei", "Die <mark>Straße</mark> ist frei"),
        ("de", "wirtschaft", "WIRTSCHAFT wächst", "<mark>WIRTSCHAFT</mark> wächst"),
        ("es", "elecciones", "La elección de hoy", "La <mark>elección</mark> de hoy"),
        ("it", "elezioni", "Le elezione regionali", "Le <mark>elezione</mark> regionali"),
        ("ja", "経済", "日本経済は回復", "日本<mark>経済</mark>は回復"),
        ("ja", "茶", "お茶の時間", "お<mark>茶</mark>の時間"),
        ("zh_cn", "经济", "台灣經濟成長", "台灣<mark>經濟</mark>成長"),
        ("zh_tw", "經濟", "中国经济增长", "中国<mark>经济</mark>增长"),
        ("zh_cn", "软件", "開源軟體社群", "開源<mark>軟體</mark>社群"),
        ("zh_tw", "網路", "网络安全法", "<mark>网络</mark>安全法"),
        ("ko", "경제", "한국 경제가 회복", "한국 <mark>경제</mark>가 회복"),
        ("ko", "경제", "경제를 살리자", "<mark>경제</mark>를 살리자"),
        # NFKC changes lengths (one character becomes four): marks stay on the original text.
        ("ja", "経済", "㍿経済部", "㍿<mark>経済</mark>部"),
        # Latin words inside CJK text use the English stemmer, as in the index.
        ("ja", "markets", "東京Marketの動き", "東京<mark>Market</mark>の動き"),
    ],
)
def test_marks_what_the_index_matches(language: str, q: str, text: str, expected: str) -> None:
    assert title(language, q, text) == expected


def test_text_is_escaped_and_marks_are_the_only_markup() -> None:
    out = title("en", "rates", '<script>alert("rates")</script> & Rates')
    assert out == (
        "&lt;script&gt;alert(&quot;<mark>rates</mark>&quot;)&lt;/script&gt;"
        " &amp; <mark>Rates</mark>"
    )


def test_only_positive_terms_are_marked() -> None:
    assert title("en", "rates -inflation", "Rates and inflation") == (
        "<mark>Rates</mark> and inflation"
    )
    assert title("en", '"interest rates" OR bank', "Bank interest rates") == (
        "<mark>Bank</mark> <mark>interest</mark> <mark>rates</mark>"
    )


def test_overlapping_runs_are_one_mark() -> None:
    assert title("ja", "東京 京都", "東京都と京都") == "<mark>東京都</mark>と<mark>京都</mark>"


def test_summary_first_then_content_then_the_start_of_the_summary() -> None:
    m = marker("en", "budget")
    summary = "A short summary about nothing in particular."
    content = ("Filler words here. " * 30) + "The budget passed. " + ("More filler. " * 30)
    snippet = m.snippet(summary, content)
    assert "<mark>budget</mark>" in snippet
    assert plain(snippet) in content
    assert len(plain(snippet)) <= SNIPPET_CHARS
    # A match in the summary wins; no match anywhere (a title or tag match) gives its start.
    assert m.snippet("The budget.", content) == "The <mark>budget</mark>."
    assert m.snippet(summary, "nothing here") == summary


def test_a_long_cjk_content_is_cut_at_sentence_ends() -> None:
    m = marker("ja", "経済")
    content = "前置きの文です。" * 40 + "日本経済は回復した。" + "後書きの文です。" * 40
    snippet = m.snippet("要約。", content)
    assert "<mark>経済</mark>" in snippet
    text = plain(snippet)
    assert text in content and len(text) <= SNIPPET_CHARS
    assert text.startswith("前置き") and text.endswith("。")


# -- properties ---------------------------------------------------------------------------

WORDS = {
    "en": ["election", "Elections", "market", "budget", "rates", "Rate", "storm", "a", "the"],
    "fr": ["économie", "Economie", "élection", "marché", "budget", "le", "la"],
    "ja": ["経済", "日本経済", "東京", "大学", "市場", "天気", "は", "の"],
    "zh_cn": ["经济", "經濟", "软件", "軟體", "网络", "網路", "市场", "的"],
    "ko": ["경제", "경제가", "선거", "시장", "서울", "학교", "를"],
}
SEPARATORS = {"en": " ", "fr": " ", "ja": "", "zh_cn": "", "ko": " "}
PUNCTUATION = [". ", ", ", "。", " & ", " <b> ", "\n\n", "'"]


@st.composite
def texts(draw: st.DrawFn, language: str, max_words: int) -> str:
    words = draw(st.lists(st.sampled_from(WORDS[language]), min_size=0, max_size=max_words))
    out = []
    for word in words:
        out.append(word)
        out.append(draw(st.sampled_from([SEPARATORS[language], *PUNCTUATION])))
    return "".join(out).strip()


def analysed(language: str, text: str) -> tuple[set[str], set[str]]:
    """(stems, folded CJK runs) of a text, by the analyser's own query path."""
    analyzer = get_analyzer(language)
    words, runs = analyzer.query_parts(text)
    stems = set(analyzer.stem_words(words)) if words else set()
    return stems, {analyzer.fold_cjk(run) for run in runs}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), language=st.sampled_from(sorted(WORDS)))
def test_snippets_are_marked_pieces_of_the_article(data: st.DataObject, language: str) -> None:
    q = " ".join(data.draw(st.lists(st.sampled_from(WORDS[language]), min_size=1, max_size=3)))
    summary = data.draw(texts(language, 12))
    content = data.draw(texts(language, 150))
    m = marker(language, q)
    snippet = m.snippet(summary, content)
    text = plain(snippet)
    assert text in summary or text in content
    assert len(text) <= SNIPPET_CHARS
    assert html.escape(text) == snippet.replace("<mark>", "").replace("</mark>", "")
    q_stems, q_runs = analysed(language, q)
    for piece in marked_pieces(snippet):
        stems, runs = analysed(language, piece)
        assert stems & q_stems or any(r in run for run in runs for r in q_runs), piece
    # No whole word left unmarked matches a query word (CJK runs are checked as pieces above).
    unmarked = MARK_RE.sub(" ", snippet)
    words = re.findall(r"[^\W_\u3000-\u9fff\uac00-\ud7af]+", html.unescape(unmarked))
    inner = words[1:-1]  # the first and last may be cut by the window
    if inner and q_stems:
        assert not (analysed(language, " ".join(inner))[0] & q_stems)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), language=st.sampled_from(sorted(WORDS)))
def test_titles_keep_their_text(data: st.DataObject, language: str) -> None:
    q = data.draw(st.sampled_from(WORDS[language]))
    text = data.draw(texts(language, 20))
    out = title(language, q, text)
    assert html.unescape(out.replace("<mark>", "").replace("</mark>", "")) == text
