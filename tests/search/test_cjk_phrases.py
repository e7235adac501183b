"""Korean, Japanese and Chinese phrases: a quoted phrase matches only where its characters
occur in that order, its runs apart only where the query has them apart (whitespace and
punctuation alike, docs/search.md "Search syntax"). Checked against a brute-force oracle
that scans each field's text with a regular expression (the index is not consulted), for
phrases, exclusions and OR of phrases, in memory and over HTTP."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from falcon.testing import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.builder import builder
from app.config import Settings
from app.search.analyzers import CJK_CLASS, CJK_RUN_RE, get_analyzer, normalize
from app.search.indexer import IndexDoc
from app.wsgi import create_app
from tests.helpers import good, write_jsonl
from tests.search.conftest import doc, searcher_for
from tests.search.test_syntax import hits

# Few characters per language, so that runs and phrases recur across documents; Chinese
# mixes traditional and simplified forms and a Taiwan word (軟體 = 软件) to exercise folding.
CHARS = {
    "ko": "차량가격을이경제성장",
    "ja": "日本経済のインタ",
    "zh_tw": "經济濟成長长軟體软件",
}
# Between runs: whitespace and punctuation (plain gaps) or a word (not a gap).
GAPS = [" ", "  ", ", ", "、", "。", "\n", " - ", " GDP ", "3", " x "]
# A character that is neither CJK nor part of a word: what may stand between adjacent runs.
_GAP_CHAR = f"(?:_|[^\\w{CJK_CLASS}])"
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fold_field(language: str, text: str) -> str:
    """A field's text as the analyser sees it: normalised, each CJK run folded."""
    analyzer = get_analyzer(language)
    return CJK_RUN_RE.sub(lambda m: analyzer.fold_cjk(m.group()), normalize(text))


def phrase_pattern(language: str, phrase: str) -> re.Pattern[str]:
    """The phrase's folded runs in order, each pair separated by one or more gap characters
    where the query separates them, joined where the query joins them."""
    analyzer = get_analyzer(language)
    runs = CJK_RUN_RE.findall(normalize(phrase))
    body = f"{_GAP_CHAR}+".join(re.escape(analyzer.fold_cjk(r)) for r in runs)
    return re.compile(body)


def oracle(language: str, docs: list[IndexDoc], phrase: str) -> set[int]:
    pattern = phrase_pattern(language, phrase)
    return {
        n
        for n, d in enumerate(docs)
        if any(
            pattern.search(fold_field(language, f))
            for f in (d.title, d.summary, d.content, "\n".join(d.tags))
        )
    }


def texts(language: str, max_runs: int) -> st.SearchStrategy[str]:
    run = st.text(alphabet=CHARS[language], min_size=1, max_size=4)
    return st.lists(st.tuples(run, st.sampled_from(GAPS)), max_size=max_runs).map(
        lambda parts: "".join(r + g for r, g in parts)
    )


def documents(language: str) -> st.SearchStrategy[list[IndexDoc]]:
    one = st.builds(
        doc,
        texts(language, 2),
        texts(language, 3),
        texts(language, 6),
        st.lists(st.text(alphabet=CHARS[language], min_size=1, max_size=3), max_size=2),
    )
    return st.lists(one, min_size=1, max_size=12)


# A phrase: two or three runs apart (a plain gap), sometimes taken from a document's text so
# that it matches somewhere, sometimes drawn afresh.
plain_gaps = st.sampled_from([" ", "、", ", ", "  "])


@st.composite
def phrases(draw: st.DrawFn, language: str, docs: list[IndexDoc]) -> str:
    if draw(st.booleans()):
        source = draw(st.sampled_from(docs))
        text = draw(st.sampled_from([source.title, source.summary, source.content]))
        runs = CJK_RUN_RE.findall(text)
        if len(runs) >= 2:
            start = draw(st.integers(0, len(runs) - 2))
            chosen = runs[start : start + draw(st.integers(2, 3))]
            # A suffix of the first run and a prefix of the last, as a reader may type them.
            chosen[0] = chosen[0][draw(st.integers(0, len(chosen[0]) - 1)) :]
            chosen[-1] = chosen[-1][: draw(st.integers(1, len(chosen[-1])))]
            return draw(plain_gaps).join(chosen)
    run = st.text(alphabet=CHARS[language], min_size=1, max_size=3)
    return draw(plain_gaps).join(draw(st.lists(run, min_size=2, max_size=3)))


cjk_languages = st.sampled_from(sorted(CHARS))


@st.composite
def korean_pair_lists(draw: st.DrawFn, docs: list[IndexDoc]) -> tuple[str, ...] | None:
    """None (build_index chooses), or listed runs (app/search/pair_words.py) drawn from the
    documents' runs and their suffixes and prefixes, which pair terms also match."""
    if draw(st.booleans()):
        return None
    runs = {
        r
        for d in docs
        for f in (d.title, d.summary, d.content, *d.tags)
        for r in CJK_RUN_RE.findall(normalize(f))
    }
    affixes = sorted(
        {r[i:] for r in runs for i in range(len(r))}
        | {r[: i + 1] for r in runs for i in range(len(r))}
    )
    if not affixes:
        return ()
    return tuple(draw(st.lists(st.sampled_from(affixes), unique=True, max_size=40)))


@PROPERTY
@given(data=st.data(), language=cjk_languages)
def test_cjk_phrases_equal_the_oracle(data: st.DataObject, language: str) -> None:
    """Korean and Japanese indexes also with any list of pair runs: a phrase of two listed
    runs is then proven by its pair term alone."""
    docs = data.draw(documents(language))
    listed = data.draw(korean_pair_lists(docs)) if language in ("ko", "ja") else None
    s = searcher_for(language, docs, listed)
    first = data.draw(phrases(language, docs))
    second = data.draw(phrases(language, docs))
    found = hits(s, f'"{first}"')
    assert found == oracle(language, docs, first)
    assert found <= hits(s, first)  # a subset of the runs' AND
    other = oracle(language, docs, second)
    assert hits(s, f'"{first}" OR "{second}"') == found | other
    assert hits(s, f'"{first}" "{second}"') == found & other
    bare = data.draw(st.text(alphabet=CHARS[language], min_size=1, max_size=2))
    assert hits(s, f'{bare} -"{first}"') == hits(s, bare) - found


@pytest.mark.parametrize(
    ("language", "texts_", "phrase", "want"),
    [
        # The case: 차량 가격을 nowhere, though both runs occur.
        ("ko", ["차량 가격을 올렸다", "차량 가격이. 가격을", "차량가격을"], "차량 가격을", {0}),
        ("ko", ["신차량, 가격을", "차량\n\n가격을", "차량 GDP 가격을"], "차량 가격을", {0, 1}),
        ("ja", ["日本 経済", "日本の経済", "日本、経済"], "日本 経済", {0, 2}),
        ("zh_tw", ["經濟 成長", "经济成长", "經濟，成長率"], "经济 成长", {0, 2}),
    ],
)
def test_examples(language: str, texts_: list[str], phrase: str, want: set[int]) -> None:
    s = searcher_for(language, [doc(t) for t in texts_])
    assert hits(s, f'"{phrase}"') == want


@pytest.mark.parametrize("listed", [(), ("차량", "가격을"), ("차량", "가격을", "가격", "신차량")])
def test_korean_pair_terms_match_run_ends_and_starts(listed: tuple[str, ...]) -> None:
    """A pair term of two listed runs holds the documents where a run ending with the first
    and a run starting with the second are apart by whitespace or punctuation only."""
    texts_ = [
        "차량 가격을",  # both whole runs
        "신차량, 가격을올렸다",  # a run ending with 차량, one starting with 가격을
        "차량 가격이. 가격을",  # 가격을 not right after 차량
        "차량가격을",  # no gap
        "차량 GDP 가격을",  # a word between: no run gap
        "가격을 차량",  # the other order
        "차량 가격을 올렸다",  # a third run after the pair
        "차량 가격을, 내렸다 올렸다",  # the pair, the third run further on
    ]
    s = searcher_for("ko", [doc(t) for t in texts_], listed)
    assert s.analyzer.pair_words == listed
    assert hits(s, '"차량 가격을"') == {0, 1, 6, 7}
    assert hits(s, '"차량 가격을" OR "가격을 차량"') == {0, 1, 5, 6, 7}
    assert hits(s, '차량 -"차량 가격을"') == {2, 3, 4, 5}
    # Three runs: the pair filters, the trigram positions prove the whole stretch.
    assert hits(s, '"차량 가격을 올렸다"') == {6}


def test_runs_never_join_across_fields() -> None:
    s = searcher_for("ko", [doc("차량", "가격을"), doc("", "", "", ["차량", "가격을"])])
    # Tags are one field, consecutive tags adjacent (as for words): see docs/search.md.
    assert hits(s, '"차량 가격을"') == {1}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("cjk_phrases")
    records = []
    bodies = {
        "ko": ["차량 가격을 올렸다", "차량 가격이 올랐다. 가격을 내렸다", "차량가격을 보라"],
        "ja": ["日本 経済は", "日本の経済", "日本、経済"],
        "zh_tw": ["經濟 成長", "经济成长", "經濟，成長率"],
    }
    for language, texts_ in bodies.items():
        for i, text in enumerate(texts_ * 2):
            field = {"title": text} if i < 3 else {"content": text}
            records.append(good(f"{language}-{i}", language=language, **({"title": "x"} | field)))
    write_jsonl(tmp / "src" / "a.jsonl", records)
    builder.build(tmp / "src", tmp / "out", jobs=1)
    return tmp / "out", records


@pytest.mark.parametrize(
    ("language", "phrase"), [("ko", "차량 가격을"), ("ja", "日本 経済"), ("zh_tw", "经济 成长")]
)
def test_http_matches_the_oracle(
    bundle: tuple[Path, list[dict]], language: str, phrase: str
) -> None:
    out, records = bundle
    client = TestClient(create_app(Settings(bundle_dir=out, comments_dsn="sqlite:///:memory:")))
    mine = [r for r in records if r["language"] == language]
    docs = [doc(r["title"], r["summary"], r["content"], r.get("tags") or ()) for r in mine]
    want = {mine[i]["id"] for i in oracle(language, docs, phrase)}
    assert want  # the examples hold matches
    for q, expected in ((f'"{phrase}"', want), (f'-"{phrase}" x OR {phrase}', None)):
        reply = client.simulate_get(
            f"/api/v1/{language}/articles/search", params={"q": q, "page_size": "100"}
        )
        assert reply.status_code == 200
        got = {item["id"] for item in reply.json["items"]}
        if expected is not None:
            assert got == expected
        else:
            assert not got & want
