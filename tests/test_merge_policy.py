"""When segments are merged (app/builder/policy.py): properties of the plan."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.builder import policy

sizes = st.lists(st.integers(1, 200_000), max_size=40)


@given(sizes=sizes, data=st.data())
def test_groups_are_disjoint_capped_and_mergeable(sizes: list[int], data: st.DataObject) -> None:
    deleted = [data.draw(st.integers(0, n)) for n in sizes]
    live = [n - d for n, d in zip(sizes, deleted, strict=True)]
    for mode in ("auto", "all"):
        groups = policy.plan(sizes, deleted, mode)
        members = [i for g in groups for i in g]
        assert len(members) == len(set(members))  # each segment in one merge at most
        for group in groups:
            # A merge either combines segments within the cap, or rewrites one segment to
            # drop its deleted documents.
            if len(group) > 1:
                assert sum(live[i] for i in group) <= policy.MAX_DOCS
            else:
                assert deleted[group[0]] > 0


def test_small_segments_merge_on_every_publish_and_full_ones_stay() -> None:
    assert policy.plan([60_000, 40_000, 100, 80], [0, 0, 0, 0], "auto") == [[2, 3]]
    assert policy.plan([60_000, 100], [0, 0], "auto") == []


def test_eight_segments_of_a_tier_merge() -> None:
    assert policy.plan([3000] * 7, [0] * 7, "auto") == []
    assert policy.plan([3000] * 8, [0] * 8, "auto") == [list(range(8))]


def test_a_segment_mostly_deleted_is_rewritten() -> None:
    assert policy.plan([60_000, 100], [20_000, 0], "auto") == [[0]]


def test_merge_all_respects_the_cap_in_order() -> None:
    assert policy.plan([2000] * 40, [0] * 40, "all") == [list(range(32)), list(range(32, 40))]
    assert policy.plan([50_000], [0], "all") == []
    assert policy.plan([], [], "all") == [] and policy.plan([5, 5], [0, 0], "none") == []


def test_a_chunk_of_a_full_build_is_compiled_in_a_worker() -> None:
    """A from-scratch build's compiles run side by side only if a chunk is not small enough
    to run inline (a chunk of 1,000 under an inline limit of 1,500 ran every CJK compile one
    after the other in the builder's own process)."""
    from app.builder import builder

    assert min(builder.CHUNK_ARTICLES.values()) >= builder._Workers.INLINE
