"""When segments are merged (docs/publishing.md, "Merges").

A publish adds one small segment per language it touches. Left alone, every query would visit
more and more segments, so after each build:

* all segments under SMALL live documents are merged into one (cheap: bounded by SMALL);
* segments of the same size tier (tier = how many times FACTOR fits between SMALL and their
  size) are merged once FACTOR of them exist, as in a log-structured merge tree, so a
  document is rewritten about log_FACTOR(archive / SMALL) times over its life;
* a segment with more than MAX_DELETED of its documents deleted is rewritten without them;
* no merge makes a segment of more than MAX_DOCS documents: up to 65,536 documents a segment
  numbers them in 16 bits in every posting, which keeps the bundle within 2x its source, and
  bounds what one merge rewrites. Full segments leave the tiers.

Merges never re-analyse text (app/builder/merge.py); their cost is reading and writing the
segments involved. `--merge` merges each language into one segment; `--no-merge` skips
merging (to measure the worst case).
"""

from __future__ import annotations

import math
from typing import Literal

SMALL = 2048
FACTOR = 8
MAX_DELETED = 0.25
MAX_DOCS = 1 << 16  # app.search.layout.SHORT_DOC_LIMIT: 16-bit document numbers


def tier(live: int) -> int | None:
    """Size tier of a segment; None for a full one (never merged to grow)."""
    if live >= MAX_DOCS // 2:
        return None
    return 0 if live < SMALL else 1 + int(math.log(live / SMALL, FACTOR))


def _capped(group: list[int], live: list[int]) -> list[list[int]]:
    """Consecutive runs of `group` of at most MAX_DOCS live documents each (single
    segments are kept as they are)."""
    runs: list[list[int]] = []
    total = 0
    for i in group:
        if runs and total + live[i] <= MAX_DOCS:
            runs[-1].append(i)
            total += live[i]
        else:
            runs.append([i])
            total = live[i]
    return runs


def plan(
    sizes: list[int], deleted: list[int], mode: Literal["auto", "all", "none"]
) -> list[list[int]]:
    """Groups of segment indexes to merge, each into one segment (groups are disjoint)."""
    if mode == "none" or not sizes:
        return []
    live = [s - d for s, d in zip(sizes, deleted, strict=True)]
    if mode == "all":
        runs = _capped(list(range(len(sizes))), live)
        return [run for run in runs if len(run) > 1 or deleted[run[0]]]
    by_tier: dict[int, list[int]] = {}
    for i, n in enumerate(live):
        t = tier(n)
        if t is not None:
            by_tier.setdefault(t, []).append(i)
    groups = []
    taken: set[int] = set()
    for t, members in sorted(by_tier.items()):
        if (t == 0 and len(members) > 1) or len(members) >= FACTOR:
            for run in _capped(members, live):
                if len(run) > 1:
                    groups.append(run)
                    taken.update(run)
    for i, (size, dead) in enumerate(zip(sizes, deleted, strict=True)):
        if i not in taken and size and dead / size > MAX_DELETED:
            groups.append([i])
    return groups
