"""A from-scratch build in three steps that any number of machines can share
(docs/publishing.md, "Building on many machines").

1. **plan** (one machine): scan every source line (app.builder.sources), checking the fields
   that place each article (the shards validate the rest as they compile it; a single
   build validates everything here), decide every story's translations
   (app.builder.stories) and each language's pair words (app/search/pair_words.py). The
   plan is those decisions, written to WORK/plan/: where each new article's line is, in
   list order, and what the merge step needs of the scan.
   The list order of each language is cut into chunks (builder.CHUNK_ARTICLES), and the
   chunks into **units**: each run of chunks a from-scratch build merges into one segment
   (app.builder.policy, "all"), or a chunk left as it is.
2. **shard K of N** (N machines at once): compiles the chunks of the units dealt to shard K
   and merges each unit, into WORK/shard-K/: content-addressed objects, and `shard.json`,
   written last, naming the plan, the shard and each unit's segment. Units are dealt by
   their cost, the same way on every machine that reads the same plan.
3. **merge** (one machine): checks that every unit of the plan was built once, by shards
   of this plan, copies their objects into OUT (hashing each against its name), and does
   what every from-scratch build does after its merges: generations, site, and the commit
   of the manifest (app.bundle.commit), so OUT serves the old bundle until then.

A single-machine from-scratch build is the same three steps in one process (the plan in
memory, every unit built straight into OUT): the same code, so the bundles are the same,
byte for byte (tests/test_build_shards.py).
"""

from __future__ import annotations

import collections
import hashlib
import io
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import numpy as np
import orjson

from app.builder import builder, policy, stories
from app.builder.retractions import RetractedArticle
from app.builder.sources import NewArticle, NewArticles, Previous, Scan, scan
from app.bundle import format as fmt
from app.bundle.commit import check_replaceable, output_lock
from app.bundle.manifest import ManifestError, Segment, segment_table
from app.bundle.objects import ObjectEntry, ObjectStore, write_atomically
from app.bundle.segment import SegmentReader
from app.languages import LANGUAGES
from app.public_urls import PublicUrls
from app.search.analyzers import CJK_LANGUAGES

PLAN_FORMAT = 1
PLAN_DIR = "plan"
PLAN_JSON = "plan.json"
PLAN_ARRAYS = "plan.npz"
SHARD_JSON = "shard.json"
# Relative cost of compiling a CJK article (character n-grams, longer records) against
# another: an estimate. Only how units are dealt to shards depends on it, never the bundle.
CJK_COST = 2


class ShardError(Exception):
    """A plan or a shard's output is missing, damaged, or of another plan."""


def shard_dir(work: Path, index: int) -> Path:
    return work / f"shard-{index}"


@dataclass(frozen=True)
class Unit:
    """Chunks of one language's list order that become one segment of the bundle."""

    language: str
    number: int  # among the language's units, in list order
    chunks: tuple[tuple[int, int], ...]  # [start, end) in the language's list order

    @property
    def key(self) -> str:
        return f"{self.language}/{self.number}"

    @property
    def docs(self) -> int:
        return sum(end - start for start, end in self.chunks)

    @property
    def cost(self) -> int:
        return self.docs * (CJK_COST if self.language in CJK_LANGUAGES else 1)


@dataclass
class Plan:
    """What every shard and the merge step must agree on (the module's docstring)."""

    src: Path
    result: Scan
    translations: dict[str, dict[int, stories.Translations]]
    order: dict[str, list[int]]  # per language: indexes into result.new, in list order
    pair_words: dict[str, tuple[str, ...]]
    urls: PublicUrls
    id: str = ""

    def articles(self, language: str, start: int, end: int) -> list[NewArticle]:
        new = self.result.new.get(language, NewArticles())
        translations = self.translations.get(language, {})
        return [
            new.get(i, self.result.paths, language, translations.get(i, ()))
            for i in self.order[language][start:end]
        ]

    def units(self) -> list[Unit]:
        """Every unit, in language order, then list order."""
        out: list[Unit] = []
        for language in LANGUAGES:
            number = 0
            n = len(self.order[language])
            size = builder.CHUNK_ARTICLES[language in CJK_LANGUAGES]
            chunks = [(s, min(s + size, n)) for s in range(0, n, size)]
            groups = policy.plan([e - s for s, e in chunks], [0] * len(chunks), "all")
            first = {group[0]: group for group in groups}
            merged = {i for group in groups for i in group}
            for i, chunk in enumerate(chunks):
                if i in first:
                    members = tuple(chunks[j] for j in first[i])
                elif i in merged:
                    continue
                else:
                    members = (chunk,)
                out.append(Unit(language, number, members))
                number += 1
        return out


class _ListOrder(Sequence[NewArticle]):
    """A language's new articles in list order, made one by one as they are read (the pair
    words read a sample of 2,000; an archive has millions)."""

    def __init__(self, plan: Plan, language: str) -> None:
        self.plan = plan
        self.language = language

    def __len__(self) -> int:
        return len(self.plan.order[self.language])

    @overload
    def __getitem__(self, i: int) -> NewArticle: ...
    @overload
    def __getitem__(self, i: slice) -> list[NewArticle]: ...
    def __getitem__(self, i: int | slice) -> NewArticle | list[NewArticle]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self.plan.articles(self.language, i, i + 1)[0]


def deal(units: list[Unit], count: int) -> list[list[Unit]]:
    """The units of each of `count` shards: the costliest first, each to the shard with the
    least cost so far (ties: the lower index), so shards finish close together."""
    shards: list[list[Unit]] = [[] for _ in range(count)]
    load = [0] * count
    for unit in sorted(units, key=lambda u: -u.cost):  # stable: plan order among equals
        k = min(range(count), key=lambda i: (load[i], i))
        shards[k].append(unit)
        load[k] += unit.cost
    return shards


# -- 1. the plan ------------------------------------------------------------------------------


def make_plan(
    src: Path, urls: PublicUrls, executor: builder._Workers, *, validate: bool = True
) -> Plan:
    """Scan `src` from scratch and decide translations and pair words (SourceError: every
    problem of the sources, as a single build reports them). `validate=False`: only the
    fields that place an article are checked here, the rest by the shards (the plan step)."""
    previous = Previous.empty()
    result = scan(src, previous, validate=validate)
    story_plan = stories.plan(result, previous, ObjectStore(src), None)
    order = {
        language: result.new.get(language, NewArticles()).list_order() for language in LANGUAGES
    }
    plan = Plan(src, result, story_plan.new, order, {}, urls)
    store = ObjectStore(src)  # not read: from scratch there is no bundle to take words from

    def run(fn: Any, *args: Any, work: int) -> Any:
        return executor.submit(fn, *args, work=work)

    futures = {
        language: builder._pair_list(store, None, language, _ListOrder(plan, language), run)
        for language in LANGUAGES
    }
    plan.pair_words = {language: tuple(f.result()) for language, f in futures.items()}
    return plan


def plan_step(src: Path, work: Path, jobs: int | None = None) -> tuple[str, tuple[int, int]]:
    """The plan step: make the plan of `src` and write it to WORK/plan/; returns its id and
    (articles, units). SourceError: nothing was written."""
    with builder._Workers(max(1, jobs or os.cpu_count() or 1)) as executor:
        plan = make_plan(src, PublicUrls.from_env(), executor, validate=False)
    plan_id = write_plan(plan, work)
    return plan_id, (sum(len(o) for o in plan.order.values()), len(plan.units()))


def write_plan(plan: Plan, work: Path) -> str:
    """Write the plan to WORK/plan/ (its arrays first, then plan.json naming their digest);
    returns the plan id."""
    arrays: dict[str, np.ndarray] = {}
    languages: dict[str, Any] = {}
    result = plan.result
    for language in LANGUAGES:
        new = result.new.get(language, NewArticles())
        for name in ("published", "file", "offset", "length", "line"):
            arrays[f"{language}/{name}"] = np.asarray(getattr(new, name))
        arrays[f"{language}/hashes"] = np.frombuffer(bytes(new.hashes), dtype=np.uint8)
        arrays[f"{language}/order"] = np.asarray(plan.order[language], dtype=np.int64)
        languages[language] = {
            "ids": new.ids,
            "stories": new.stories,
            "translations": {
                str(i): [list(t) for t in ts]
                for i, ts in sorted(plan.translations.get(language, {}).items())
            },
            "retractions": [
                [file, line, r.record(), is_new]
                for file, line, r, is_new in result.retractions.get(language, [])
            ],
            "pair_words": list(plan.pair_words[language]),
        }
    for i, entry in enumerate(result.files):
        arrays[f"lines/{i}"] = result.lines[entry["path"]]
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    blob = buffer.getvalue()
    header = {
        "format": PLAN_FORMAT,
        "arrays": hashlib.sha256(blob).hexdigest(),
        "paths": [p.relative_to(plan.src).as_posix() for p in result.paths],
        "files": result.files,
        "public_urls": plan.urls.manifest(),
        "chunk_articles": {
            "cjk": builder.CHUNK_ARTICLES[True],
            "other": builder.CHUNK_ARTICLES[False],
        },
        "max_docs": policy.MAX_DOCS,
        "languages": languages,
    }
    data = orjson.dumps(header)
    directory = work / PLAN_DIR
    directory.mkdir(parents=True, exist_ok=True)
    (directory / PLAN_JSON).unlink(missing_ok=True)  # a plan half replaced is no plan
    write_atomically(directory / PLAN_ARRAYS, blob)
    write_atomically(directory / PLAN_JSON, data)
    return hashlib.sha256(data).hexdigest()[:20]


def read_plan(work: Path, src: Path) -> Plan:
    """The plan in WORK/plan/, its sources under `src` (ShardError if missing or damaged,
    or made with other chunk sizes)."""
    directory = work / PLAN_DIR
    try:
        data = (directory / PLAN_JSON).read_bytes()
        blob = (directory / PLAN_ARRAYS).read_bytes()
    except FileNotFoundError as exc:
        raise ShardError(f"no plan in {directory} ({exc.filename}): run the plan step") from None
    header = orjson.loads(data)
    if header.get("format") != PLAN_FORMAT:
        raise ShardError(f"{directory}: plan format {header.get('format')}, not {PLAN_FORMAT}")
    if hashlib.sha256(blob).hexdigest() != header["arrays"]:
        raise ShardError(f"{directory / PLAN_ARRAYS} does not match {PLAN_JSON}: damaged plan")
    chunks = {"cjk": builder.CHUNK_ARTICLES[True], "other": builder.CHUNK_ARTICLES[False]}
    if header["chunk_articles"] != chunks or header["max_docs"] != policy.MAX_DOCS:
        raise ShardError(f"{directory}: made by a builder of other chunk sizes; plan again")
    arrays = np.load(io.BytesIO(blob), allow_pickle=False)
    result = Scan(paths=[src / p for p in header["paths"]])
    result.files = header["files"]
    result.lines = {entry["path"]: arrays[f"lines/{i}"] for i, entry in enumerate(result.files)}
    translations: dict[str, dict[int, stories.Translations]] = {}
    order: dict[str, list[int]] = {}
    pair_words: dict[str, tuple[str, ...]] = {}
    for language in LANGUAGES:
        meta = header["languages"][language]
        new = NewArticles()
        new.ids = meta["ids"]
        new.stories = meta["stories"]
        for name in ("published", "file", "offset", "length", "line"):
            getattr(new, name).frombytes(arrays[f"{language}/{name}"].tobytes())
        new.hashes = bytearray(arrays[f"{language}/hashes"].tobytes())
        if new.ids:
            result.new[language] = new
        result.kept[language] = np.zeros(0, dtype=bool)
        result.kept_at[language] = np.zeros(0, dtype=np.int64)
        for file, line, record, is_new in meta["retractions"]:
            result.retract(file, line, RetractedArticle.from_record(language, record), is_new)
        translations[language] = {
            int(i): tuple((lang, article) for lang, article in ts)
            for i, ts in meta["translations"].items()
        }
        order[language] = arrays[f"{language}/order"].tolist()
        pair_words[language] = tuple(meta["pair_words"])
    urls = PublicUrls.from_manifest(header["public_urls"])
    plan = Plan(src, result, translations, order, pair_words, urls)
    plan.id = hashlib.sha256(data).hexdigest()[:20]
    return plan


# -- 2. units, in a shard or in a single build --------------------------------------------------


@dataclass
class Built:
    """The segments of some units, and the manifest entries of the objects they wrote."""

    segments: dict[str, Segment] = field(default_factory=dict)  # unit key -> its segment
    entries: dict[str, ObjectEntry] = field(default_factory=dict)
    categories: dict[str, list[str]] = field(default_factory=dict)  # language -> of its articles
    merged: int = 0


# Compiles submitted and not yet collected, per worker (build_units).
_COMPILES_IN_FLIGHT = 2


def build_units(executor: builder._Workers, out: Path, plan: Plan, units: list[Unit]) -> Built:
    """Compile every chunk of `units` into segments of the object store in `out`, then merge
    each unit's chunks into one, as a from-scratch build always did: every compile is
    submitted before the first merge, a few at a time (`_COMPILES_IN_FLIGHT` per worker): a
    compile waiting in the pool holds its articles' places in the builder's memory, and
    900,000 of them held at once were about 350 MB of the builder's own peak."""
    built = Built()
    chunks = iter([(unit, start, end) for unit in units for start, end in unit.chunks])
    in_flight: collections.deque[tuple[Unit, Any]] = collections.deque()

    def submit_more() -> None:
        while len(in_flight) < _COMPILES_IN_FLIGHT * executor.jobs:
            chunk = next(chunks, None)
            if chunk is None:
                return
            unit, start, end = chunk
            future = executor.submit(
                builder._compile_job,
                str(out),
                unit.language,
                plan.articles(unit.language, start, end),
                plan.urls,
                plan.pair_words[unit.language],
                work=builder.CHUNK_ARTICLES[unit.language in CJK_LANGUAGES],
            )
            in_flight.append((unit, future))

    store = ObjectStore(out)
    compiled: dict[str, list[Segment]] = {unit.key: [] for unit in units}
    submit_more()
    while in_flight:
        unit, future = in_flight.popleft()
        desc, written = future.result()
        submit_more()
        built.entries.update(written)
        compiled[unit.key].append(desc)
        built.categories.setdefault(unit.language, []).extend(
            SegmentReader(store, desc).categories()
        )
    merges = {
        unit.key: executor.submit(
            builder._merge_job,
            str(out),
            unit.language,
            [(desc, np.zeros(0, dtype=np.int64)) for desc in compiled[unit.key]],
            work=unit.docs // 4,
        )
        for unit in units
        if len(unit.chunks) > 1
    }
    for unit in units:
        if unit.key in merges:
            desc, written = merges[unit.key].result()
            built.entries.update(written)
            built.merged += 1
        else:
            (desc,) = compiled[unit.key]
        built.segments[unit.key] = desc
    return built


def run_shard(
    src: Path, work: Path, index: int, count: int, jobs: int | None = None
) -> tuple[int, int]:
    """Build shard `index` of `count` from the plan in `work` into WORK/shard-INDEX/; returns
    (units, articles). SourceError when a source line changed since the plan."""
    if not 0 <= index < count:
        raise ShardError(f"shard {index} of {count}: the index must be in 0..{count - 1}")
    plan = read_plan(work, src)
    mine = deal(plan.units(), count)[index]
    out = shard_dir(work, index)
    if out.exists():
        shutil.rmtree(out)  # a shard run again (a retried pod) starts over
    store = ObjectStore(out)
    store.create()
    with builder._Workers(max(1, jobs or os.cpu_count() or 1)) as executor:
        built = build_units(executor, out, plan, mine)
    descriptor = {
        "format": PLAN_FORMAT,
        "plan": plan.id,
        "shard": index,
        "shards": count,
        "segments": {key: segment.to_json() for key, segment in built.segments.items()},
        "objects": {name: list(entry) for name, entry in sorted(built.entries.items())},
        "categories": built.categories,
        "merged": built.merged,
    }
    write_atomically(out / SHARD_JSON, orjson.dumps(descriptor))
    return len(mine), sum(u.docs for u in mine)


# -- 3. the merge ---------------------------------------------------------------------------------


def collect(plan: Plan, work: Path, count: int, store: ObjectStore) -> Built:
    """Every shard's units, checked against the plan before anything is copied, then their
    objects copied into `store`, each hashed against its name as it is copied (on a damaged
    one, what this call copied is removed again)."""
    built = Built()
    owner: dict[str, int] = {}
    descriptors = []
    for index in range(count):
        directory = shard_dir(work, index)
        try:
            descriptor = orjson.loads((directory / SHARD_JSON).read_bytes())
        except FileNotFoundError:
            raise ShardError(
                f"shard {index} of {count} has no output ({directory / SHARD_JSON}): "
                "it did not finish; run it again, then the merge"
            ) from None
        except orjson.JSONDecodeError as exc:
            raise ShardError(f"{directory / SHARD_JSON} is damaged ({exc})") from None
        if (descriptor.get("plan"), descriptor.get("shard"), descriptor.get("shards")) != (
            plan.id,
            index,
            count,
        ):
            raise ShardError(
                f"{directory / SHARD_JSON} is shard {descriptor.get('shard')} of "
                f"{descriptor.get('shards')} of plan {descriptor.get('plan')}, not shard "
                f"{index} of {count} of plan {plan.id}: build that shard again"
            )
        try:
            segments = segment_table(descriptor["segments"])
        except (KeyError, ManifestError) as exc:
            raise ShardError(f"{directory / SHARD_JSON} is damaged ({exc})") from None
        for key in segments:
            if key in owner:
                raise ShardError(f"unit {key} built by shards {owner[key]} and {index}")
            owner[key] = index
        descriptors.append((descriptor, segments))
    missing = [u.key for u in plan.units() if u.key not in owner]
    if missing:
        raise ShardError(f"units {', '.join(missing[:5])} of plan {plan.id} were built by no shard")
    copied: list[str] = []
    try:
        for index, (descriptor, segments) in enumerate(descriptors):
            built.segments.update(segments)
            for language, names in descriptor["categories"].items():
                built.categories.setdefault(language, []).extend(names)
            built.merged += descriptor["merged"]
            for name, (size, crc32) in descriptor["objects"].items():
                built.entries[name] = ObjectEntry(size, crc32)
                if store.has(name, size):
                    continue
                try:
                    data = (shard_dir(work, index) / fmt.OBJECTS / name).read_bytes()
                except FileNotFoundError:
                    raise ShardError(f"shard {index}: object {name} is missing") from None
                with store.writer() as writer:  # aborted (nothing kept) if the check raises
                    writer.write(data)
                    if writer.name() != name:
                        raise ShardError(
                            f"shard {index}: object {name} is damaged (its bytes differ)"
                        )
                    writer.commit()
                copied.append(name)
    except BaseException:
        for name in copied:
            store.path(name).unlink(missing_ok=True)
        raise
    return built


def merge_shards(
    work: Path,
    count: int,
    out: Path,
    jobs: int | None = None,
    *,
    wait: float = 0.0,
    publish_time: int | None = None,
) -> builder.BuildReport:
    """Merge the `count` shards of the plan in `work` into the bundle `out` (the module's
    docstring, step 3). ShardError or OutputError: `out` keeps serving what it served."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    with output_lock(out, wait=wait):
        check_replaceable(out)
        plan = read_plan(work, Path("."))  # the merge reads no source line
        store = ObjectStore(out)
        existing = builder._served_manifest(out)
        store.create()
        store.remove_temporaries()
        built = collect(plan, work, count, store)
        with builder._Workers(jobs) as executor:
            return builder.finish_full(store, out, plan, built, existing, executor, publish_time)
