"""Search syntax (phrases, exclusion, OR): set properties between answers, a brute-force phrase
oracle over each document's analysed words, the parser on hostile input, and the same
properties through a built bundle (LanguageData) and over HTTP."""

from __future__ import annotations

import random
import time
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from falcon.testing import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.builder import builder
from app.bundle.language import LanguageData, SearchPage
from app.bundle.reader import Bundle
from app.config import Settings
from app.search import searcher as searcher_module
from app.search.analyzers import get_analyzer
from app.search.gaps import decode_gaps, encode_gaps
from app.search.indexer import IndexDoc
from app.search.query import _words_in_order, compile_query, is_plain, parse
from app.search.searcher import Searcher
from app.wsgi import create_app
from tests.helpers import good, write_jsonl
from tests.search.conftest import doc, searcher_for

VOCAB = {
    # Frequent words too (the, of, der, für, de, la...): their adjacent pairs are posted.
    "en": ["interest", "rates", "rate", "inflation", "market", "bank", "the", "of", "The", "in"],
    "de": ["Zinsen", "steigen", "Markt", "Bank", "Straße", "Wahl", "der", "für", "die"],
    "fr": ["taux", "d'intérêt", "économie", "marché", "banque", "de", "la", "les"],
    "ja": ["経済", "日本経済", "金融", "市場", "東京", "インターネット", "選挙"],
    "ko": ["기후", "변화", "변화가", "경제", "시장", "서울", "선거"],
    "zh_tw": ["經濟", "经济", "金融", "市場", "台灣", "軟體", "網路"],
}
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def text_of(rng: random.Random, language: str, n: int) -> str:
    words = VOCAB[language]
    sep = "" if language in ("ja", "zh_tw") and rng.random() < 0.5 else " "
    return sep.join(rng.choice(words) for _ in range(n))


def corpus(seed: int, language: str, n: int = 30) -> list[IndexDoc]:
    rng = random.Random(seed)
    return [
        doc(
            text_of(rng, language, rng.randint(1, 4)),
            text_of(rng, language, rng.randint(0, 6)),
            text_of(rng, language, rng.randint(0, 12)),
            [rng.choice(VOCAB[language])] if rng.random() < 0.3 else [],
        )
        for _ in range(n)
    ]


def hits(searcher: Searcher, q: str) -> set[int]:
    total, rows = searcher.search(q, 0, 10_000)
    assert total == len(rows)
    return set(rows)


def phrase_oracle(language: str, docs: list[IndexDoc], phrase: str) -> set[int]:
    """Documents where the phrase's analysed words occur consecutively inside one field, found
    by scanning each field's analysed words (the index is not consulted)."""
    analyzer = get_analyzer(language)
    want = _words_in_order(analyzer, phrase)
    out = set()
    for n, d in enumerate(docs):
        for field in (d.title, d.summary, d.content, "\n".join(d.tags)):
            have = _words_in_order(analyzer, field)
            if any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)):
                out.add(n)
    return out


languages = st.sampled_from(sorted(VOCAB))
seeds = st.integers(0, 10**6)
picks = st.lists(st.integers(0, 100), min_size=3, max_size=3)


def words3(language: str, pick: list[int]) -> list[str]:
    vocab = VOCAB[language]
    return [vocab[i % len(vocab)] for i in pick]


@PROPERTY
@given(language=languages, seed=seeds, pick=picks)
def test_exclusion_or_and_precedence_are_set_operations(
    language: str, seed: int, pick: list[int]
) -> None:
    s = searcher_for(language, corpus(seed, language))
    a, b, c = words3(language, pick)
    ha, hb, hc = hits(s, a), hits(s, b), hits(s, c)
    assert hits(s, f"{a} -{b}") == ha - hb
    assert hits(s, f'{a} -"{b}"') == ha - hb
    assert hits(s, f"{a} OR {b}") == ha | hb
    assert hits(s, f"{a} {b} OR {c}") == ha & (hb | hc)
    assert hits(s, f"{b} OR {c} {a}") == ha & (hb | hc)
    assert hits(s, f"{a} OR {b} OR {c}") == ha | hb | hc
    assert hits(s, f"-{a}") == set()
    assert hits(s, f"{a} OR") == ha
    assert hits(s, f"OR OR {a}") == ha


def pair_list_of(language: str, listed: list[bool] | None) -> tuple[str, ...] | None:
    """None (chosen by build_index from the documents), or the stems of the VOCAB words
    ``listed`` marks (the empty list: no pair terms at all)."""
    if listed is None:
        return None
    stems = [_words_in_order(get_analyzer(language), w)[0] for w in VOCAB[language]]
    return tuple(dict.fromkeys(stem for stem, keep in zip(stems, listed, strict=False) if keep))


listings = st.none() | st.lists(st.booleans(), min_size=10, max_size=10)


@PROPERTY
@given(language=st.sampled_from(["en", "de", "fr"]), seed=seeds, pick=picks, listed=listings)
def test_phrase_hits_equal_the_adjacency_oracle(
    language: str, seed: int, pick: list[int], listed: list[bool] | None
) -> None:
    """Whichever words the index pairs (its own choice, none, any of them), a phrase finds
    exactly the documents where its words are adjacent."""
    docs = corpus(seed, language)
    s = searcher_for(language, docs, pair_list_of(language, listed))
    a, b, c = words3(language, pick)
    for phrase in (f"{a} {b}", f"{a} {b} {c}", f"{a}, {b}"):
        found = hits(s, f'"{phrase}"')
        assert found <= hits(s, phrase)  # a subset of the AND hits
        assert found == phrase_oracle(language, docs, phrase)
        assert hits(s, f'{c} -"{phrase}"') == hits(s, c) - found


@PROPERTY
@given(language=st.sampled_from(["ja", "ko", "zh_tw"]), seed=seeds, pick=picks)
def test_cjk_phrases_are_subsets_of_the_and_hits(language: str, seed: int, pick: list[int]) -> None:
    s = searcher_for(language, corpus(seed, language))
    a, b, _ = words3(language, pick)
    assert hits(s, f'"{a}"') == hits(s, a)  # one run: the same character sequence
    assert hits(s, f'"{a}{b}"') == hits(s, f"{a}{b}")
    assert hits(s, f'"{a} {b}"') <= hits(s, f"{a} {b}")


def test_phrase_never_spans_two_fields() -> None:
    s = searcher_for("en", [doc("interest", "rates rise"), doc("interest rates", "")])
    assert hits(s, '"interest rates"') == {1}
    assert hits(s, "interest rates") == {0, 1}


def test_stemmed_phrase_and_latin_words_in_cjk_text() -> None:
    s = searcher_for("en", [doc("Interest Rates rose"), doc("rates of interest")])
    assert hits(s, '"interest rate"') == {0}  # analysed: rates -> rate
    ja = searcher_for("ja", [doc("artificial intelligence の進化"), doc("intelligence artificial")])
    assert hits(ja, '"artificial intelligence"') == {0}


def test_hyphen_inside_a_word_is_not_an_exclusion() -> None:
    s = searcher_for("en", [doc("covid-19 cases"), doc("covid cases"), doc("e-mail scam")])
    assert hits(s, "covid-19") == {0}
    assert hits(s, "e-mail") == {2}
    assert hits(s, "cases -19") == {1}


def test_or_scores_only_the_terms_a_document_has() -> None:
    docs = [doc("market", "market news"), doc("storm", "storm"), doc("market storm")]
    s = searcher_for("en", docs)
    data = {q: s.search(q, 0, 10) for q in ("market OR storm", "market", "storm")}
    assert data["market OR storm"][0] == 3
    # The document with both words ranks first (two title terms), the others after it.
    assert data["market OR storm"][1][0] == 2


def test_plain_queries_compile_to_the_pre_syntax_terms() -> None:
    for language in VOCAB:
        analyzer = get_analyzer(language)
        for q in ("interest rates", "covid-19 e-mail", "日本経済 東京", "!!!", "a - b", "x-"):
            compiled = compile_query(q, analyzer)
            if analyzer.analyze_query(q).empty:
                assert compiled.empty
            else:
                assert compiled.simple and compiled.required is not None
                assert compiled.required.terms == analyzer.analyze_query(q)


HOSTILE = [
    '"-OR' * 50,
    '-"' * 100,
    "OR " * 66,
    "OR OR",
    "OR",
    "a OR",
    "OR a",
    "-",
    "--x",
    "- - -",
    '"unclosed phrase',
    'a "b',
    '""',
    '"' + " ".join(["interest rates"] * 25) + '"',
    "-" * 200,
    '"' * 200,
    "a -a",
]


@pytest.mark.parametrize("language", sorted(VOCAB))
def test_hostile_queries_compile_fast_and_search(language: str) -> None:
    s = searcher_for(language, corpus(1, language))
    analyzer = get_analyzer(language)
    for q in HOSTILE:
        start = time.perf_counter()
        compiled = compile_query(q, analyzer)
        total, rows = s.search(q, 0, 20)
        assert time.perf_counter() - start < 0.5, q
        assert total >= len(rows)
        if compiled.empty:
            assert total == 0


@given(st.text(alphabet='ab "-OR\u3000経', max_size=200))
def test_parser_never_raises(q: str) -> None:
    parsed = parse(q)
    compiled = compile_query(q, get_analyzer("en"))
    assert compiled.empty == (compiled.required is None and not compiled.any_of)
    assert all(not t.negated for clause in parsed.clauses for t in clause)


def test_positive_texts() -> None:
    compiled = compile_query(
        '"interest rates" -inflation bank OR !!! OR market', get_analyzer("en")
    )
    assert compiled.positive_texts == ["interest rates", "bank", "market"]
    assert compile_query("-inflation", get_analyzer("en")).empty


# --- through a built bundle and HTTP ------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    tmp = tmp_path_factory.mktemp("syntax")
    rng = random.Random(12)
    records = []
    for language in VOCAB:
        for i in range(25):
            records.append(
                good(
                    f"{language}-{i}",
                    language=language,
                    title=text_of(rng, language, rng.randint(1, 4)),
                    summary=text_of(rng, language, rng.randint(1, 6)),
                    content=text_of(rng, language, rng.randint(1, 12)),
                    published_at=f"2026-03-{1 + i % 9:02d}T00:00:00Z",
                )
            )
    src, out = tmp / "src", tmp / "out"
    # Two files, two builds: the bundle has more than one segment per language.
    write_jsonl(src / "a.jsonl", records[::2])
    builder.build(src, out, jobs=1)
    write_jsonl(src / "b.jsonl", records[1::2])
    builder.build(src, out, jobs=1, merge="none")
    return out, records


def matches(data: LanguageData, q: str) -> set[int]:
    return set(data.scored(q))


@settings(max_examples=25, deadline=None)
@given(language=languages, pick=picks)
def test_bundle_set_properties(
    built: tuple[Path, list[dict]], language: str, pick: list[int]
) -> None:
    data = Bundle.load(built[0]).languages[language]
    a, b, c = words3(language, pick)
    ha, hb, hc = matches(data, a), matches(data, b), matches(data, c)
    assert matches(data, f"{a} -{b}") == ha - hb
    assert matches(data, f"{a} OR {b}") == ha | hb
    assert matches(data, f"{a} {b} OR {c}") == ha & (hb | hc)
    assert matches(data, f'"{a} {b}"') <= matches(data, f"{a} {b}")
    total = data.search_page(f"{a} OR {b}", SearchPage(), None, 0, 5)[0]
    assert total == len(ha | hb)


def test_bundle_phrase_oracle(built: tuple[Path, list[dict]]) -> None:
    out, records = built
    client = TestClient(create_app(Settings(bundle_dir=out, comments_dsn="sqlite:///:memory:")))
    en = [r for r in records if r["language"] == "en"]
    docs = [doc(r["title"], r["summary"], r["content"]) for r in en]
    for phrase in ("interest rates", "rates rise", "market bank", "inflation eases storm"):
        want = {en[i]["id"] for i in phrase_oracle("en", docs, phrase)}
        reply = client.simulate_get(
            "/api/v1/en/articles/search", params={"q": f'"{phrase}"', "page_size": "100"}
        )
        assert reply.status_code == 200
        assert {item["id"] for item in reply.json["items"]} == want
        assert reply.json["total"] == len(want)


@pytest.mark.parametrize(
    ("language", "q"),
    [
        ("en", '"interest rates" -inflation'),
        ("ja", "経済 OR 金融"),
        ("ko", '"기후 변화"'),
        ("zh_tw", "经济 -金融"),
        ("de", "-Zinsen"),
        ("fr", 'OR OR "'),
    ],
)
def test_http_syntax_answers_200(built: tuple[Path, list[dict]], language: str, q: str) -> None:
    out, _ = built
    client = TestClient(create_app(Settings(bundle_dir=out, comments_dsn="sqlite:///:memory:")))
    reply = client.simulate_get(f"/api/v1/{language}/articles/search", params={"q": q})
    assert reply.status_code == 200
    data = Bundle.load(out).languages[language]
    assert reply.json["total"] == len(data.scored(q))


@given(
    st.lists(
        st.lists(st.integers(0, 1 << 31), min_size=1, max_size=30, unique=True),
        min_size=1,
        max_size=30,
    ),
    st.data(),
)
def test_position_gaps_round_trip(postings: list[list[int]], data: st.DataObject) -> None:
    lists = [sorted(p) for p in postings]
    nbytes, coded = encode_gaps(
        np.asarray([len(p) for p in lists]), np.asarray([x for p in lists for x in p])
    )
    chosen = sorted(data.draw(st.sets(st.integers(0, len(lists) - 1), min_size=1)))
    start = np.concatenate(([0], np.cumsum(nbytes)))
    blob = np.concatenate([coded[start[i] : start[i + 1]] for i in chosen])
    positions, counts = decode_gaps(blob, nbytes[chosen])
    assert positions.tolist() == [x for i in chosen for x in lists[i]]
    assert counts.tolist() == [len(lists[i]) for i in chosen]
    offsets = np.asarray([i << 32 for i in chosen], dtype=np.int64)
    keys, _ = decode_gaps(blob, nbytes[chosen], offsets)
    assert keys.tolist() == [(i << 32) + x for i in chosen for x in lists[i]]


@given(st.text(alphabet='ab -"OR\t\u3000', max_size=40))
def test_the_plain_shortcut_agrees_with_the_parser(q: str) -> None:
    assert is_plain(q) == parse(q).plain
    compiled = compile_query(q, get_analyzer("en"))
    if parse(q).plain and not compiled.empty:
        assert compiled.simple
        assert compiled.required is not None
        assert compiled.required.terms == get_analyzer("en").analyze_query(q)


@settings(max_examples=25, deadline=None)
@given(language=st.sampled_from(["en", "de"]), pick=picks)
def test_or_scores_what_each_document_holds(
    built: tuple[Path, list[dict]], language: str, pick: list[int]
) -> None:
    """A match of `a OR b` scores (and counts title terms) exactly as `a` when it lacks b, and
    as `a b` when it has both: the terms it holds, in the same order, and nothing else."""
    data = Bundle.load(built[0]).languages[language]
    a, b, _ = words3(language, pick)
    either, only_a, both = data.scored(f"{a} OR {b}"), data.scored(a), data.scored(f"{a} {b}")
    for position, score in either.items():
        if position in both:
            assert score == both[position]
        elif position in only_a:
            assert score == only_a[position]
        else:
            assert score == data.scored(b)[position]
    assert data.scored(f"{a} -{b}") == {p: s for p, s in only_a.items() if p not in both}


@PROPERTY
@given(language=st.sampled_from(["en", "de", "fr"]), seed=seeds, pick=picks)
def test_kept_decoded_positions_prove_as_the_varint_path(
    language: str, seed: int, pick: list[int]
) -> None:
    """A word's positions decoded once and kept (app/search/searcher.py, _word_positions)
    prove the same phrases as positions decoded per query, also while a small budget
    evicts them."""
    docs = corpus(seed, language)
    a, b, c = words3(language, pick)
    queries = [
        f'"{a} {b}"',
        f'"{a} {b} {c}"',
        f'"{b} {a}" OR "{c} {a}"',
        f'{c} -"{a} {b}"',
        f'{c} "{a} {b}" OR "{b} {a}"',
        f'"{a} {b}" "{b} {c}"',
    ]
    fresh = searcher_for(language, docs)
    expected = [hits(fresh, q) for q in queries]
    for keep, budget in ((0, 1 << 30), (0, 64)):
        with (
            patch.object(searcher_module, "_KEEP_DECODED", keep),
            patch.object(searcher_module, "_DECODED_BYTES", budget),
        ):
            kept = searcher_for(language, docs)
            for _ in range(2):  # decoded and kept, then read from what is kept
                assert [hits(kept, q) for q in queries] == expected


@PROPERTY
@given(seed=seeds, keep=st.booleans(), share=st.sampled_from([0.0, 0.03, 0.2, 0.6, 1.0]))
def test_word_keys_are_the_positions_of_the_documents_asked(
    seed: int, keep: bool, share: float
) -> None:
    """A word's keys (document << 32) + position for any set of documents, read every way
    (kept: the whole array, a mask of the documents or a gather; not kept: decoded for those
    documents), are exactly the positions the index stores for them."""
    docs = corpus(seed, "en", n=200)
    with patch.object(searcher_module, "_KEEP_DECODED", 0 if keep else 1 << 40):
        s = searcher_for("en", docs)
        for word in ("interest", "the", "market"):
            term = s._word_term(word.encode())
            lo, hi = s._ptr[term], s._ptr[term + 1]
            postings = s._np_docs[lo:hi].astype(np.int64)
            nbytes = s._np_wordcount[lo:hi].astype(np.int64)
            data = s._np_wordpos[s._wordpbase[term] : s._wordpbase[term + 1]]
            every, _ = decode_gaps(data, nbytes, postings << 32)
            # Any documents, not only the word's: the keys are those of the word's among them.
            asked = np.flatnonzero(np.random.default_rng(seed).random(len(docs)) < share)
            expected = every[np.isin(every >> 32, asked)]
            for _ in range(2):  # made (and kept, if so), then read again
                assert s._word_keys(term, asked).tolist() == expected.tolist()
            assert s._word_keys(term, None).tolist() == every.tolist()
