"""The id index (app/bundle/id_index.py) against a dict: every id finds its gid, nothing else
finds anything, and a table that cannot belong to the ids is refused."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.bundle.id_index import IdIndex, build_table, table_size

IDS = st.lists(st.text(min_size=1, max_size=12), max_size=300, unique=True)


def _index(ids: list[bytes], gids: list[int], table: bytes | None = None) -> IdIndex:
    off = np.concatenate(([0], np.cumsum([len(i) for i in ids], dtype=np.int64)))
    return IdIndex(
        memoryview(b"".join(ids)),
        memoryview(off.astype("<u8").tobytes()).cast("Q"),
        memoryview(np.asarray(gids, dtype="<u4").tobytes()).cast("I"),
        memoryview(build_table(ids) if table is None else table).cast("I"),
    )


@settings(max_examples=200, deadline=None)
@given(ids=IDS, others=st.lists(st.text(max_size=12), max_size=30), data=st.data())
def test_every_id_finds_its_gid_and_nothing_else_finds_one(
    ids: list[str], others: list[str], data: st.DataObject
) -> None:
    keys = sorted(i.encode("utf-8", "surrogatepass") for i in ids)
    gids = data.draw(st.permutations(range(len(keys))))
    oracle = {k.decode("utf-8", "surrogatepass"): g for k, g in zip(keys, gids, strict=True)}
    index = _index(keys, list(gids))
    for article_id, gid in oracle.items():
        assert index.get(article_id) == gid
    for other in others:
        assert index.get(other) == oracle.get(other)


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 1000, 100_000])
def test_the_table_is_a_power_of_two_at_least_twice_the_ids(count: int) -> None:
    size = table_size(count)
    assert size & (size - 1) == 0 and size >= max(2, 2 * count) and size < max(4, 4 * count)


def test_a_table_that_does_not_fit_the_ids_is_refused() -> None:
    ids = [b"a", b"b", b"c"]
    with pytest.raises(ValueError, match="slots"):
        _index(ids, [0, 1, 2], build_table(ids[:1]))
    bad = np.frombuffer(build_table(ids), dtype="<u4").copy()
    bad[bad.argmax()] = 9  # names a fourth id
    with pytest.raises(ValueError, match="not there"):
        _index(ids, [0, 1, 2], bad.tobytes())
