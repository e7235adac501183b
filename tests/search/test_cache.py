"""The bounded cache of matches for queries with syntax (app/search/cache.py): its bounds,
and that a cached answer is the answer."""

from __future__ import annotations

import numpy as np
import pytest

from app.search.cache import MatchCache


def matches(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.arange(n, dtype=np.uint32),
        np.linspace(0.0, 1.0, n),
        np.zeros(n, dtype=np.int64),
    )


def test_entries_are_bounded_least_recently_used_first() -> None:
    cache = MatchCache(max_entries=3, max_bytes=1 << 20)
    for q in "abc":
        cache.put(q, matches(10))
    assert cache.get("a") is not None  # a is now the most recent
    cache.put("d", matches(10))
    assert cache.get("b") is None
    assert all(cache.get(q) is not None for q in "acd")
    assert cache.size == (3, 3 * 10 * 20)


def test_bytes_are_bounded_and_large_results_not_kept() -> None:
    cache = MatchCache(max_entries=100, max_bytes=4000)
    cache.put("big", matches(60))  # 1,200 bytes > 4,000 / 4
    assert cache.get("big") is None
    for i in range(10):
        cache.put(str(i), matches(40))  # 800 bytes each
    entries, size = cache.size
    assert size <= 4000 and entries == 5
    assert cache.get("9") is not None and cache.get("0") is None
    cache.clear()
    assert cache.size == (0, 0)


def test_cached_arrays_are_read_only() -> None:
    cache = MatchCache()
    cache.put("q", matches(5))
    pos, _, _ = cache.get("q") or matches(0)
    with pytest.raises(ValueError):
        pos[0] = 7


def test_http_answers_the_same_from_the_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from falcon.testing import TestClient

    from app.builder import builder
    from app.bundle.reader import Bundle
    from app.config import Settings
    from app.wsgi import create_app
    from tests.helpers import good, write_jsonl

    words = ["interest rates rise", "rates of interest", "interest rates fall", "storm"]
    records = [
        good(f"a{i}", title=words[i % 4], content=" ".join(words[: i % 4 + 1])) for i in range(12)
    ]
    write_jsonl(tmp_path / "src" / "en.jsonl", records)
    builder.build(tmp_path / "src", tmp_path / "out", jobs=1)
    app = create_app(Settings(bundle_dir=tmp_path / "out", comments_dsn="sqlite:///:memory:"))
    client = TestClient(app)
    fresh = Bundle.load(tmp_path / "out").languages["en"]
    for q in ('"interest rates" -fall', 'storm OR "rates of"', "interest rates"):
        replies = [
            client.simulate_get("/api/v1/en/articles/search", params={"q": q}) for _ in range(3)
        ]
        assert len({(r.status_code, r.content, r.headers.get("etag")) for r in replies}) == 1
        assert replies[0].json["total"] == len(fresh.scored(q))
