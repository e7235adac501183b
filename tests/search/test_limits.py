"""The one limit of the search syntax: at most MAX_PHRASES quoted phrases a query
(docs/api.md section 7), answered 422 with a message naming it, counted as the parser
counts phrases."""

from __future__ import annotations

import falcon.testing
from hypothesis import given
from hypothesis import strategies as st

from app.search.query import MAX_PHRASES, parse, phrase_count

SEARCH = "/api/v1/en/articles/search"


def test_more_phrases_than_the_limit_is_a_422_naming_it(
    client: falcon.testing.TestClient,
) -> None:
    phrases = [f'"economy word{i}"' for i in range(MAX_PHRASES + 1)]
    ok = client.simulate_get(SEARCH, params={"q": " OR ".join(phrases[:MAX_PHRASES])})
    assert ok.status_code == 200
    for q in (" ".join(phrases), "economy " + " ".join("-" + p for p in phrases)):
        reply = client.simulate_get(SEARCH, params={"q": q})
        assert reply.status_code == 422
        assert reply.json == {
            "detail": [
                {
                    "type": "value_error",
                    "loc": ["query", "q"],
                    "msg": f"Value error, q holds {MAX_PHRASES + 1} phrases;"
                    f" at most {MAX_PHRASES} are allowed",
                }
            ]
        }


def test_the_limit_is_in_the_openapi_document(client: falcon.testing.TestClient) -> None:
    spec = client.simulate_get("/openapi.json").json
    params = spec["paths"]["/api/v1/{language}/articles/search"]["get"]["parameters"]
    q = next(p for p in params if p["name"] == "q")
    assert f"at most {MAX_PHRASES} quoted phrases" in (
        q.get("description", "") + q["schema"].get("description", "")
    )


@given(st.text(alphabet='ab "-OR', max_size=60))
def test_phrase_count_is_the_parsers(q: str) -> None:
    parsed = parse(q)
    terms = [t for clause in parsed.clauses for t in clause] + list(parsed.excluded)
    assert phrase_count(q) == sum(1 for t in terms if t.phrase and t.text.strip())
