"""Translations: articles of different languages with the same story_id are one story.

Every Article carries `translations` (the story's other languages), so a publish that adds,
removes or changes a story's member in one language changes the Article JSON of the members
in the other languages. The builder finds them through the served generation's story index
(story id -> gid, per language), compares their old translations with the new ones, and
recompiles only those that differ, from their stored Article JSON: the publish costs the
stories it touched, and an incremental build serves what a from-scratch build serves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app import models
from app.builder.records import Article, SourceError, from_wire
from app.builder.sources import Previous, Scan
from app.bundle import format as fmt
from app.bundle.id_index import SortedIds
from app.bundle.manifest import Language, Manifest
from app.bundle.objects import ObjectStore
from app.bundle.segment import SegmentReader
from app.languages import LANGUAGES

Translations = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class KeptArticle:
    """A served article whose translations changed: compiled again from its Article JSON,
    keeping its source line hash, so the next build still recognises its line."""

    json: bytes
    story_id: str
    hash: bytes
    id: str
    published: int
    translations: Translations
    path: Path | None = None

    def read(self, fh: Any) -> Article:
        wire = models.Article.model_validate_json(self.json)
        return from_wire(
            wire, source=f"bundle:{self.id}", story_id=self.story_id, translations=self.translations
        )


@dataclass
class StoryPlan:
    """Translations of new articles (by their index in Scan.new) and the served articles
    to compile again, per language."""

    new: dict[str, dict[int, Translations]] = field(default_factory=dict)
    again: dict[str, list[KeptArticle]] = field(default_factory=dict)


class _Served:
    """One language of the served bundle, read on demand: gid -> segment document."""

    def __init__(self, store: ObjectStore, meta: Language) -> None:
        self.readers = [SegmentReader(store, d) for d in meta.segments]
        self.bases = np.cumsum([0] + [r.docs for r in self.readers]).tolist()

    def locate(self, gid: int) -> tuple[SegmentReader, int]:
        n = int(np.searchsorted(self.bases, gid, side="right")) - 1
        return self.readers[n], gid - self.bases[n]


def _translations(members: dict[str, str], language: str) -> Translations:
    return tuple(
        (lang, members[lang]) for lang in LANGUAGES if lang in members and lang != language
    )


def plan(
    result: Scan, previous: Previous, store: ObjectStore, manifest: Manifest | None
) -> StoryPlan:
    """Check story ids (one article per story and language) and decide every translation;
    marks re-compiled served articles as replaced in `result`. Raises SourceError."""
    problems: list[tuple[int, int, str]] = []
    new_of: dict[tuple[str, str], int] = {}  # (language, story) -> index in result.new
    affected: set[str] = set()
    for language, new in result.new.items():
        order = sorted(range(len(new)), key=lambda i: (new.file[i], new.line[i]))
        for i in order:
            story = new.stories[i]
            if story is None:
                continue
            first = new_of.setdefault((language, story), i)
            if first != i:
                problems.append(
                    (
                        new.file[i],
                        new.line[i],
                        f"duplicate story_id {story!r} in language {language!r} (first at "
                        f"{result.where(new.file[first], new.line[first])})",
                    )
                )
            affected.add(story)
    served = {
        language: _Served(store, manifest.languages[language])
        for language in LANGUAGES
        if manifest is not None
    }
    # Stories that lose a member: a served article with a story that is not kept.
    for language, index in previous.stories.items():
        gids = np.frombuffer(index.gids(), dtype="<u4")
        gone: np.ndarray | list[int] = (
            np.flatnonzero(~result.kept[language][gids]) if gids.size else []
        )
        affected.update(index[int(i)].decode() for i in gone)
    story_plan = StoryPlan()
    for story in sorted(affected):
        old: dict[str, int] = {}  # language -> served gid
        for language, index in previous.stories.items():
            gid = index.get(story)
            if gid is not None:
                old[language] = gid
        members: dict[str, str] = {}
        kept: dict[str, int] = {}
        for language in LANGUAGES:
            member = new_of.get((language, story))
            gid = old.get(language)
            still = gid is not None and bool(result.kept[language][gid])
            if member is not None:
                new = result.new[language]
                members[language] = new.ids[member]
                if still and gid is not None:
                    problems.append(
                        (
                            new.file[member],
                            new.line[member],
                            f"duplicate story_id {story!r} in language {language!r} (first "
                            f"at {result.kept_where(language, gid)})",
                        )
                    )
            elif still and gid is not None:
                kept[language] = gid
                members[language] = _id_of(served[language], gid)
        for language in LANGUAGES:
            member = new_of.get((language, story))
            if member is not None:
                story_plan.new.setdefault(language, {})[member] = _translations(members, language)
        if not kept:
            continue
        before = {lang: _id_of(served[lang], gid) for lang, gid in old.items()}
        for language, gid in kept.items():
            now = _translations(members, language)
            if now == _translations(before, language):
                continue
            reader, local = served[language].locate(gid)
            width = fmt.LINE_HASH_BYTES
            line_hash = reader.lines()[local * width : (local + 1) * width].tobytes()
            story_plan.again.setdefault(language, []).append(
                KeptArticle(
                    reader.record(local).tobytes(),
                    story,
                    line_hash,
                    members[language],
                    int(reader.published()[local]),
                    now,
                )
            )
            result.kept[language][gid] = False
            result.replaced.setdefault(language, set()).add(gid)
    if problems:
        raise SourceError(
            [f"{result.where(f, n)}: field 'story_id': {m}" for f, n, m in sorted(problems)]
        )
    return story_plan


def _id_of(served: _Served, gid: int) -> str:
    reader, local = served.locate(gid)
    return reader.id_at(local).decode()


def load_story_index(store: ObjectStore, meta: Language) -> SortedIds:
    """A served language's story index (story id -> gid)."""
    return SortedIds(
        *(
            store.path(meta.files[name]).read_bytes()
            for name in (fmt.STORY_IDS_BIN, fmt.STORY_IDS_OFF, fmt.STORY_IDS_GID)
        )
    )
