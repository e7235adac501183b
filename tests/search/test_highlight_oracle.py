"""The highlighter (app/search/highlight.py) marks byte for byte what the previous one
(tests/search/highlight_oracle.py) marks: generated articles and queries (words, phrases,
CJK runs, exclusions, OR) in all nine languages, the marks' own placeholder characters in
the text included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.search import highlight
from app.search.analyzers import get_analyzer
from app.search.query import compile_query
from app.search.zh_fold import ZH_PHRASE_RE, ZH_PHRASES, fold_chars_and_codes
from tests.search import highlight_oracle

# Words that stem alike, accents, ligatures and full-width forms, Latin words in CJK text,
# traditional and simplified Chinese and Taiwan vocabulary, Korean particles.
WORDS = {
    "en": ["election", "Elections", "ELECTED", "market", "rates", "Rate", "ﬁnance", "the", "of"],
    "fr": ["économie", "Economie", "économistes", "élection", "marché", "l'état", "le", "Œuvre"],
    "de": ["Straße", "strasse", "Brücken", "Brucken", "Wahl", "wahlen", "der", "die"],
    "es": ["elección", "elecciones", "récord", "record", "gobierno", "del", "la"],
    "it": ["città", "citta", "elezione", "elezioni", "governo", "della", "il"],
    "ja": ["経済", "日本経済", "東京", "市場", "ＧＤＰ", "gdp", "は", "の", "㍿", "インターネット"],
    "ko": ["경제", "경제가", "경제를", "선거", "시장", "서울", "GDP", "를"],
    "zh_cn": ["经济", "經濟", "软件", "軟體", "网络", "網路", "打印机", "印表機", "的", "AI"],
    "zh_tw": ["經濟", "经济", "網際網路", "互联网", "貓熊", "猫熊", "軟體", "的", "ai"],
}
LATIN = {"en", "fr", "de", "es", "it"}
PUNCTUATION = [". ", ", ", "。", "、", " & ", " <b> ", "\n\n", "'", '"', "\x00", "…"]


@st.composite
def texts(draw: st.DrawFn, language: str, max_words: int) -> str:
    words = draw(st.lists(st.sampled_from(WORDS[language]), max_size=max_words))
    joiners = [" "] if language in LATIN or language == "ko" else ["", " "]
    out = []
    for word in words:
        out.append(word)
        out.append(draw(st.sampled_from(joiners * 4 + PUNCTUATION)))
    return "".join(out).strip()


@st.composite
def queries(draw: st.DrawFn, language: str) -> str:
    terms = []
    for _ in range(draw(st.integers(1, 4))):
        words = draw(st.lists(st.sampled_from(WORDS[language]), min_size=1, max_size=3))
        kind = draw(st.sampled_from(["word", "phrase", "exclusion", "or"]))
        if kind == "phrase":
            terms.append('"' + " ".join(words) + '"')
        elif kind == "exclusion":
            terms.append("-" + words[0])
        elif kind == "or" and terms:
            terms.append("OR " + words[0])
        else:
            terms.append(words[0])
    return " ".join(terms)


@settings(max_examples=500, deadline=None)
@given(data=st.data(), language=st.sampled_from(sorted(WORDS)))
def test_marks_as_the_previous_highlighter(data: st.DataObject, language: str) -> None:
    analyzer = get_analyzer(language)
    articles = [
        {
            "id": f"a{n}",
            "title": data.draw(texts(language, 10)),
            "summary": data.draw(texts(language, 30)),
            "content": data.draw(texts(language, data.draw(st.sampled_from([0, 20, 200, 600])))),
            "category": "news",
        }
        for n in range(data.draw(st.integers(1, 3)))
    ]
    for _ in range(2):  # two pages: the per-worker token stems kept from the first
        texts_ = compile_query(data.draw(queries(language)), analyzer).positive_texts
        old = highlight_oracle.Highlighter(analyzer, texts_)
        new = highlight.Highlighter(analyzer, texts_)
        for article in articles:
            assert new.highlight(article) == old.highlight(article)


PHRASES = sorted(ZH_PHRASES)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(PHRASES),
            st.sampled_from(PHRASES).map(lambda p: p[:-1]),  # a phrase's prefix: no phrase
            st.sampled_from(["的", "。", "，", "a", "經濟", "网"]),
        ),
        min_size=30,
        max_size=80,
    )
)
def test_taiwan_vocabulary_found_as_the_regex_finds_it(pieces: list[str]) -> None:
    """Longest phrase first, left to right, in the numpy path (long texts) and the regex
    path (short ones), a phrase cut by the end of the text included."""
    text = "".join(pieces)
    for piece in (text, text[:-1], text[:40]):
        folded, codes = fold_chars_and_codes(piece)
        expected = [
            (m.start(), m.end(), ZH_PHRASES[m.group()]) for m in ZH_PHRASE_RE.finditer(folded)
        ]
        assert highlight._zh_phrases(folded, codes) == expected
