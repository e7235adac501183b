"""Reading the source tree for a build: which articles are new, changed, kept or gone.

Every non-blank source line is identified by a 128-bit hash of its bytes (xxHash XXH3). A line
whose hash is the source line of an article already in the bundle is that article, unchanged,
and is not parsed again; only the other lines are parsed and validated (app.builder.records).
A file whose path, size and modification time match the previous build is not even read: its
line hashes come from the build state. So a publish costs what changed, not the archive.

The scan keeps no article text in memory: a new article is remembered by where its line is
(file, offset, length) and the few fields that decide its place in the bundle.
"""

from __future__ import annotations

import dataclasses
import itertools
import mmap
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pydantic
import xxhash

from app import models
from app.builder.compile import epoch_micros
from app.builder.records import (
    MAX_REPORTED_ERRORS,
    Article,
    RecordError,
    SourceError,
    parse_record,
    source_files,
)
from app.builder.retractions import RetractedArticle
from app.bundle.id_index import SortedIds
from app.languages import LANGUAGES

# One (line number, hash) record per non-blank line of a source file, kept in the build state.
LINE_RECORD = np.dtype([("line", "<u4"), ("hash", "V16")])


def line_hash(line: bytes | memoryview) -> bytes:
    return xxhash.xxh3_128_digest(line)


@dataclass(frozen=True, slots=True)
class NewArticle:
    """A new or changed article: where its line is, and what orders it."""

    path: Path
    offset: int
    length: int
    line: int
    hash: bytes
    language: str
    id: str
    published: int  # microseconds since the epoch
    translations: tuple[tuple[str, str], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def read(self, fh: Any) -> Article:
        """Parse the line again (the scan validated it) from an open file of `path`;
        SourceError if the line is no longer the one scanned (a sharded build reads it on
        another machine, maybe long after the plan)."""
        fh.seek(self.offset)
        data = fh.read(self.length)
        if line_hash(data) != self.hash:
            raise SourceError(
                [f"{self.where}: the line changed since the sources were scanned; plan again"]
            )
        try:  # a sharded build's plan checked only the fields that place the article
            article = parse_record(orjson.loads(data), self.where)
        except RecordError as exc:
            field = f" field '{exc.field}':" if exc.field else ""
            raise SourceError([f"{self.where}:{field} {exc.message}"]) from None
        if (article.id, article.language, epoch_micros(article.published)) != (
            self.id,
            self.language,
            self.published,
        ):
            raise SourceError([f"{self.where}: the record and the plan disagree on its place"])
        return dataclasses.replace(article, translations=self.translations)


class NewArticles:
    """One language's new or changed articles, kept compactly (about 60 bytes each) so that a
    from-scratch build of a large archive does not hold an object per article."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.stories: list[str | None] = []
        self.published = array("q")
        self.file = array("i")
        self.offset = array("q")
        self.length = array("q")
        self.line = array("i")
        self.hashes = bytearray()

    def __len__(self) -> int:
        return len(self.ids)

    def add(
        self, file: int, offset: int, length: int, line: int, digest: bytes, article: Article
    ) -> None:
        self.add_key(
            file,
            offset,
            length,
            line,
            digest,
            _Key(article.id, article.story_id, article.published),
        )

    def add_key(
        self, file: int, offset: int, length: int, line: int, digest: bytes, key: Any
    ) -> None:
        """`key`: what places the article (id, story_id, published)."""
        self.ids.append(key.id)
        self.stories.append(key.story_id)
        self.published.append(epoch_micros(key.published))
        self.file.append(file)
        self.offset.append(offset)
        self.length.append(length)
        self.line.append(line)
        self.hashes += digest

    def get(
        self,
        i: int,
        paths: list[Path],
        language: str,
        translations: tuple[tuple[str, str], ...] = (),
    ) -> NewArticle:
        return NewArticle(
            paths[self.file[i]],
            self.offset[i],
            self.length[i],
            self.line[i],
            bytes(self.hashes[i * 16 : i * 16 + 16]),
            language,
            self.ids[i],
            self.published[i],
            translations,
        )

    def list_order(self) -> list[int]:
        """Indexes in list order: published_at descending, then id ascending."""
        return sorted(range(len(self.ids)), key=lambda i: (-self.published[i], self.ids[i]))


@dataclass
class Previous:
    """What the bundle being updated serves: for every article, its source line hash, its
    language and gid; each language's ids; and the build state of each source file."""

    keys: np.ndarray  # uint64: first 8 bytes of each line hash, sorted
    hashes: np.ndarray  # the full 16-byte hashes, in the order of keys
    languages: np.ndarray  # int64 index into LANGUAGES, in the order of keys
    refs: np.ndarray  # int64 gid, in the order of keys
    ids: dict[str, SortedIds]
    files: dict[str, dict[str, Any]]  # relative path -> {"size", "mtime_ns", "lines": records}
    sizes: dict[str, int] = field(default_factory=dict)  # gids per language (deleted included)
    stories: dict[str, SortedIds] = field(default_factory=dict)  # served story ids -> gid
    # line hash -> a served retraction (app.builder.retractions), recognised like an article
    retractions: dict[bytes, RetractedArticle] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> Previous:
        none = np.zeros(0, dtype=np.int64)
        return cls(none.astype(np.uint64), none, none, none, {}, {})

    def find(self, digest: bytes) -> tuple[str, int] | None:
        key = np.frombuffer(digest[:8], dtype="<u8")[0]
        i = int(np.searchsorted(self.keys, key))
        while i < self.keys.size and self.keys[i] == key:
            if self.hashes[i].tobytes() == digest:
                return LANGUAGES[int(self.languages[i])], int(self.refs[i])
            i += 1
        return None

    def find_all(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """find() for many line hashes (V16) at once: (index into LANGUAGES, or -1 for a line
        of no served article; gid). Vectorised; the scalar path only on a prefix tie."""
        languages = np.full(wanted.size, -1, dtype=np.int64)
        gids = np.zeros(wanted.size, dtype=np.int64)
        if not wanted.size or not self.keys.size:
            return languages, gids
        keys = np.frombuffer(wanted.tobytes(), dtype="<u8")[::2]
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
        hit = self.hashes[at] == wanted
        languages[hit], gids[hit] = self.languages[at[hit]], self.refs[at[hit]]
        for i in np.flatnonzero((self.keys[at] == keys) & ~hit).tolist():
            found = self.find(wanted[i].tobytes())
            if found is not None:
                languages[i], gids[i] = LANGUAGES.index(found[0]), found[1]
        return languages, gids

    def gid_of(self, language: str, article_id: str) -> int | None:
        index = self.ids.get(language)
        return index.get(article_id) if index is not None else None


@dataclass
class Scan:
    """The outcome of reading the sources against the previous bundle."""

    paths: list[Path] = field(default_factory=list)  # the source files, in reading order
    new: dict[str, NewArticles] = field(default_factory=dict)  # per language
    kept: dict[str, np.ndarray] = field(default_factory=dict)  # per language: bool per gid
    replaced: dict[str, set[int]] = field(default_factory=dict)  # gids with a new version
    files: list[dict[str, Any]] = field(default_factory=list)  # the new build state's files
    lines: dict[str, np.ndarray] = field(default_factory=dict)  # relative path -> records
    problems: list[str] = field(default_factory=list)
    # Where each kept article's line is, per language and gid: file << 32 | line (0: gone).
    kept_at: dict[str, np.ndarray] = field(default_factory=dict)
    # Per language: (file, line, retraction, whether its line is new) of every retracted line.
    retractions: dict[str, list[tuple[int, int, RetractedArticle, bool]]] = field(
        default_factory=dict
    )

    def retract(self, file: int, line: int, retraction: RetractedArticle, new: bool) -> None:
        self.retractions.setdefault(retraction.language, []).append((file, line, retraction, new))

    def problem(self, where: str, field_name: str | None, message: str) -> None:
        self.problems.append(
            f"{where}: field '{field_name}': {message}" if field_name else f"{where}: {message}"
        )
        if len(self.problems) >= MAX_REPORTED_ERRORS:
            self.problems.append(f"(stopped after {MAX_REPORTED_ERRORS} problems)")
            raise SourceError(self.problems)

    def where(self, file: int, line: int) -> str:
        return f"{self.paths[file]}:{line}"

    def kept_where(self, language: str, gid: int) -> str:
        """Where the line of kept article `gid` is (kept_at holds file << 32 | line)."""
        at = int(self.kept_at[language][gid])
        return self.where(at >> 32, at & 0xFFFFFFFF)


def _file_lines(path: Path) -> list[tuple[int, int, int, bytes]]:
    """(line number, offset, length, hash) of each non-blank line; reads through mmap, so a
    large file is hashed without copying it."""
    out: list[tuple[int, int, int, bytes]] = []
    with path.open("rb") as fh:
        size = fh.seek(0, 2)
        if size == 0:
            return out
        with (
            mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data,
            memoryview(data) as view,
        ):
            pos, number = 0, 0
            while pos < size:
                end = data.find(b"\n", pos)
                if end < 0:
                    end = size
                number += 1
                with view[pos:end] as line:
                    if bytes(line[:64]).strip() or bytes(line).strip():  # blank: ignored
                        out.append((number, pos, end - pos, line_hash(line)))
                pos = end + 1
    return out


def scan(src: Path, previous: Previous, *, validate: bool = True) -> Scan:
    """Read `src` against `previous`; raises SourceError with every problem (up to 100).
    `validate=False` (a sharded build's plan): of a new article's line only the fields that
    place it (id, language, published_at, story_id) are checked here, the rest by the shard
    that compiles it; retractions are checked whole."""
    if not src.is_dir():
        raise SourceError([f"{src}: source directory does not exist"])
    paths = source_files(src)
    if not paths:
        raise SourceError([f"{src}: no *.jsonl files found"])
    result = Scan(paths=paths)
    # Where each kept article's line is: file << 32 | line, per language and gid (0: not seen).
    kept_at = result.kept_at = {
        lang: np.zeros(previous.sizes.get(lang, 0), dtype=np.int64) for lang in LANGUAGES
    }
    for file, path in enumerate(paths):
        rel = path.relative_to(src).as_posix()
        st = path.stat()
        state = previous.files.get(rel)
        if state and state["size"] == st.st_size and state["mtime_ns"] == st.st_mtime_ns:
            records = state["lines"]  # unchanged file: every line is a kept article
            places = None  # read only where a line is not a served article's (a retraction)
        else:
            places = _file_lines(path)
            records = np.array([(n, h) for n, _, _, h in places], dtype=LINE_RECORD)
        result.files.append({"path": rel, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
        result.lines[rel] = records
        languages, gids = previous.find_all(records["hash"])
        _keep(result, file, records["line"], languages, gids)
        to_parse = []
        for i in np.flatnonzero(languages < 0).tolist():
            digest = records["hash"][i].tobytes()
            retraction = previous.retractions.get(digest)
            if retraction is not None:  # an unchanged retraction: not parsed again
                result.retract(file, int(records["line"][i]), retraction, new=False)
            else:
                if places is None:  # the build state holds a line no longer served: read it
                    places = _file_lines(path)
                to_parse.append(places[i])
        if to_parse:
            _parse_lines(file, to_parse, result, validate)
        del places, languages, gids, to_parse
    result.kept = {lang: at != 0 for lang, at in kept_at.items()}
    _duplicates(result)
    _resolve(result, previous)
    if result.problems:
        raise SourceError(result.problems)
    return result


def _keep(
    result: Scan,
    file: int,
    numbers: np.ndarray,
    languages: np.ndarray,
    gids: np.ndarray,
) -> None:
    """Mark the served articles whose lines these are (file `file`, line `numbers`) as kept,
    where they are; a line of an article already seen, in an earlier file or earlier in this
    one, is a problem naming the first."""
    here = np.int64(file) << 32 | numbers.astype(np.int64)
    repeated: list[tuple[int, str, int]] = []  # (index of the line, language, gid)
    for n, language in enumerate(LANGUAGES):
        lines = np.flatnonzero(languages == n)
        if not lines.size:
            continue
        seen, g = result.kept_at[language], gids[lines]
        fresh = np.zeros(lines.size, dtype=bool)
        fresh[np.unique(g, return_index=True)[1]] = True
        fresh &= seen[g] == 0
        seen[g[fresh]] = here[lines[fresh]]
        repeated += [
            (i, language, gid)
            for i, gid in zip(lines[~fresh].tolist(), g[~fresh].tolist(), strict=True)
        ]
    for i, language, gid in sorted(repeated):
        same = result.kept_where(language, gid)
        result.problem(
            result.where(file, int(numbers[i])), "id", f"duplicate line, the same article as {same}"
        )


@dataclass(frozen=True, slots=True)
class _Key:
    id: str
    story_id: str | None
    published: Any  # datetime


class _Placing(pydantic.BaseModel):
    """The fields of a source line that place its article in the bundle, validated as
    models.SourceArticle validates them."""

    model_config = pydantic.ConfigDict(extra="ignore")
    id: models.ArticleId
    language: models.Language
    published_at: models.Timestamp
    story_id: models.StoryId | None = None


def _placing(record: Any, where: str) -> tuple[str, _Key] | None:
    """The language and key of an article's line, or None for a line to parse whole (a
    retraction, or one whose placing fields are wrong: its full parse names the problem)."""
    if not isinstance(record, dict) or record.get("retracted") is not None:
        return None
    try:
        valid = _Placing.model_validate(record)
    except pydantic.ValidationError:
        return None
    return valid.language.value, _Key(valid.id, valid.story_id, valid.published_at)


def _parse_lines(
    file: int, lines: list[tuple[int, int, int, bytes]], result: Scan, validate: bool = True
) -> None:
    with result.paths[file].open("rb") as fh:
        for number, offset, length, digest in lines:
            where = result.where(file, number)
            fh.seek(offset)
            try:
                record = orjson.loads(fh.read(length))
                placed = None if validate else _placing(record, where)
                if placed is not None:
                    language, key = placed
                    new = result.new.get(language)
                    if new is None:
                        new = result.new[language] = NewArticles()
                    new.add_key(file, offset, length, number, digest, key)
                    continue
                article = parse_record(record, where)
            except orjson.JSONDecodeError as exc:
                result.problem(where, None, f"invalid JSON: {exc}")
                continue
            except RecordError as exc:
                result.problem(where, exc.field, exc.message)
                continue
            if article.retracted is not None:
                result.retract(file, number, RetractedArticle.of(article, digest), new=True)
                continue
            new = result.new.get(article.language)
            if new is None:
                new = result.new[article.language] = NewArticles()
            new.add(file, offset, length, number, digest, article)


def _duplicates(result: Scan) -> None:
    """An id given twice among the new lines and the retractions: every copy after the first
    is a problem."""
    problems = []
    for language in LANGUAGES:
        new = result.new.get(language, NewArticles())
        lines = [(new.ids[i], new.file[i], new.line[i]) for i in range(len(new))]
        lines += [(r.id, file, line) for file, line, r, _ in result.retractions.get(language, [])]
        lines.sort()
        for a, b in itertools.pairwise(lines):
            if a[0] == b[0]:
                first = next(x for x in lines if x[0] == a[0])
                problems.append(
                    (
                        b[1],
                        b[2],
                        f"duplicate id {b[0]!r} in language {language!r} (first at "
                        f"{result.where(first[1], first[2])})",
                    )
                )
    for file, line, message in sorted(problems):
        result.problem(result.where(file, line), "id", message)


def _resolve(result: Scan, previous: Previous) -> None:
    """A new article whose id is already served replaces it, unless that article's own line
    is still in the sources: then the id is there twice."""
    for language in LANGUAGES:
        new = result.new.get(language, NewArticles())
        lines = [(new.ids[i], new.file[i], new.line[i]) for i in range(len(new))]
        lines += [(r.id, file, line) for file, line, r, _ in result.retractions.get(language, [])]
        for article_id, file, line in lines:
            gid = previous.gid_of(language, article_id)
            if gid is None:
                continue
            if result.kept_at[language][gid]:
                result.problem(
                    result.where(file, line),
                    "id",
                    f"duplicate id {article_id!r} in language {language!r} "
                    f"(first at {result.kept_where(language, gid)})",
                )
            else:
                result.replaced.setdefault(language, set()).add(gid)


def line_records(data: bytes) -> np.ndarray:
    if len(data) % LINE_RECORD.itemsize:
        raise ValueError("build state line records are truncated")
    return np.frombuffer(data, dtype=LINE_RECORD)
