"""The bundle builder: compiles source JSONL articles into a bundle directory
(docs/publishing.md; its command line is app/builder/cli.py).

When the output already holds a bundle the build is incremental: unchanged source lines are
recognised by their hash and kept, new and changed articles become a new segment, and an
article whose line is gone is retracted. `--full` builds from scratch. Either way the result
serves exactly what a from-scratch build of the same sources serves.

A build writes every new object (fsynced), then commits its manifest by the protocol the
installer shares (app.bundle.commit): the verified record, `manifest.json` by an atomic
rename, then the build state; unreferenced objects are deleted last. Killed at any point, it
leaves a servable bundle.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from app import surrogate_keys
from app.builder import changes, policy, retractions, stories
from app.builder.compile import compile_segment, index_doc
from app.builder.generation import build_generation
from app.builder.merge import SegmentReader, merge_segments
from app.builder.records import MAX_REPORTED_ERRORS, Article, SourceError
from app.builder.site import build_site
from app.builder.sources import LINE_RECORD, NewArticle, NewArticles, Previous, scan
from app.bundle import changes as change_log
from app.bundle import format as fmt
from app.bundle import manifest as manifests
from app.bundle import versions
from app.bundle.commit import check_replaceable, commit, output_lock
from app.bundle.errors import BundleError
from app.bundle.id_index import SortedIds
from app.bundle.manifest import Language, Manifest, ManifestError, Segment
from app.bundle.objects import ObjectEntry, ObjectStore, write_atomically
from app.bundle.reader import check_objects
from app.languages import LANGUAGES
from app.public_urls import PublicUrls
from app.search import layout, pair_words
from app.search.analyzers import CJK_LANGUAGES
from app.search.indexer import choose_pair_words

# What the build decides on the way (why it builds from scratch, a damaged bundle) goes to
# logging; what it built is its return value (BuildReport). The command line
# (app/builder/cli.py) prints notes on stdout and warnings on stderr.
log = logging.getLogger(__name__)

# Articles per newly compiled segment, which bounds a compile's memory whatever the archive:
# 1,000 Japanese articles peak at about 500 MB (numpy n-gram arrays; 2,000 at 714 MB), 5,000
# Latin ones about as much, two at once (docs/benchmarks.md, "Build memory"). A from-scratch
# build merges a language's segments into one, and the merged bytes do not depend on where
# the chunks were cut.
CHUNK_ARTICLES = {True: 1000, False: 5000}

Merge = Literal["auto", "all", "none"]


@dataclass
class BuildReport:
    bundle_id: str
    incremental: bool
    added: int = 0
    replaced: int = 0
    retracted: int = 0  # removed: their line is gone (404)
    # retraction notices added, changed or withdrawn (docs/api.md §11: 410 with a notice)
    retractions: int = 0
    merged: int = 0  # segments written by merges
    segments: dict[str, int] = field(default_factory=dict)
    changed_languages: list[str] = field(default_factory=list)
    changed_articles: dict[str, list[str]] = field(default_factory=dict)  # language -> ids
    # language -> categories of the articles added, changed (old and new) or retracted
    changed_categories: dict[str, list[str]] = field(default_factory=dict)
    # What a CDN must purge after this publish (app.surrogate_keys, docs/delivery.md).
    purge_keys: list[str] = field(default_factory=list)


def purge_keys(report: BuildReport, site_changed: bool) -> list[str]:
    """A full build may change any response: every language key and the site key. An
    incremental one: each touched language's collections, the touched categories' pages, the
    touched articles, and the site documents when their bytes changed."""
    site = [surrogate_keys.SITE_KEY] if site_changed or not report.incremental else []
    if not report.incremental:
        return [*(surrogate_keys.language_key(language) for language in LANGUAGES), *site]
    keys = []
    for language in LANGUAGES:
        if language not in report.changed_languages:
            continue
        keys.append(surrogate_keys.collection_key(language))
        keys += [
            surrogate_keys.category_key(language, c)
            for c in report.changed_categories.get(language, [])
        ]
        keys += [
            surrogate_keys.article_key(language, i)
            # an id may be there twice: a withdrawn retraction is also a new article
            for i in dict.fromkeys(report.changed_articles.get(language, []))
        ]
    return keys + site


def _read(articles: list[NewArticle | stories.KeptArticle]) -> list[Article]:
    handles: dict[Path, Any] = {}
    problems: list[str] = []  # every bad record of the chunk (a sharded build's shard)
    try:
        records = []
        for a in articles:
            fh = None
            if a.path is not None:  # a KeptArticle is read from the bundle, not a file
                fh = handles.get(a.path) or handles.setdefault(a.path, open(a.path, "rb"))  # noqa: SIM115
            try:
                records.append(a.read(fh))
            except SourceError as exc:
                problems += exc.problems
    finally:
        for fh in handles.values():
            fh.close()
    if problems:
        raise SourceError(problems[:MAX_REPORTED_ERRORS])
    return records


def _pair_words_job(
    language: str, articles: list[NewArticle | stories.KeptArticle]
) -> tuple[str, ...]:
    return choose_pair_words(language, [index_doc(a) for a in _read(articles)])


def _compile_job(
    out: str,
    language: str,
    articles: list[NewArticle | stories.KeptArticle],
    urls: PublicUrls,
    pair_list: tuple[str, ...],
) -> tuple[Segment, dict[str, ObjectEntry]]:
    store = ObjectStore(Path(out))
    records = _read(articles)
    files = compile_segment(language, records, [a.hash for a in articles], urls, pair_list)
    desc_files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}
    for name in sorted(files):
        obj, entry = store.put(files[name])
        desc_files[name] = obj
        entries[obj] = entry
    return Segment(len(records), desc_files), entries


def _search_meta(store: ObjectStore, files: Mapping[str, str]) -> layout.SearchMeta:
    """A segment's search.meta, from its files (component name -> object)."""
    return layout.SearchMeta.parse(store.path(files[layout.META]).read_bytes())


def _pair_words_of(store: ObjectStore, segment: Segment) -> tuple[str, ...]:
    """The pair words a segment's search index numbers."""
    return _search_meta(store, segment.files).pair_words


def _pair_list(
    store: ObjectStore,
    built_on: Manifest | None,
    language: str,
    new: Sequence[NewArticle | stories.KeptArticle],
    run: Any,
) -> Any:
    """A future of the language's pair words: those of its segments in the bundle built on
    (every segment of a language has the same), else chosen from a sample of `new`."""
    segments = () if built_on is None else built_on.languages[language].segments
    if segments:
        return _Done(_pair_words_of(store, segments[0]))
    if language not in pair_words.PAIR_LANGUAGES or not new:
        return _Done(())
    chosen = [new[i] for i in pair_words.sample(len(new))]
    return run(_pair_words_job, language, chosen, work=len(chosen))


def _merge_job(
    out: str, language: str, inputs: list[tuple[Segment, np.ndarray]]
) -> tuple[Segment, dict[str, ObjectEntry]]:
    return merge_segments(ObjectStore(Path(out)), language, inputs)


def _served_manifest(out: Path) -> Manifest | None:
    """The manifest `out` serves, if this release can read it (else: build from scratch)."""
    path = out / fmt.MANIFEST
    if not path.is_file():
        return None
    try:
        return manifests.read(path)
    except ManifestError as exc:
        log.info("cannot build on %s (%s): building from scratch", out, exc)
        return None


def _reuse_problem(store: ObjectStore, manifest: Manifest) -> str | None:
    """Why the segments of `manifest` cannot be reused, if they cannot: they are reused as
    they are, so pieces compressed by another codec, or an index of another format or
    analyser version, mean building from scratch, not mixing versions in one bundle."""
    for meta in manifest.languages.values():
        problem = versions.mismatch({"codec": meta.codec})
        if problem:
            return problem
    try:
        for meta in manifest.languages.values():
            for desc in meta.segments:
                try:
                    _search_meta(store, desc.files)
                except layout.IndexVersionError as exc:
                    return versions.mismatch(exc.recorded)
    except (OSError, ValueError, AttributeError):
        return None  # damaged: _load_previous reports it and starts over
    return None


def _load_previous(store: ObjectStore, manifest: Manifest, out: Path) -> Previous:
    """Line hashes, gids and ids of every served article, and the per-file build state."""
    check_objects(out, manifest)  # BundleError: a damaged bundle is built again from scratch
    keys, hashes, langs, gids = [], [], [], []
    ids: dict[str, SortedIds] = {}
    story_index: dict[str, SortedIds] = {}
    retracted: dict[bytes, retractions.RetractedArticle] = {}
    for li, language in enumerate(LANGUAGES):
        entry = manifest.languages[language]
        retracted.update((r.hash, r) for r in retractions.load(store, entry, language))
        order = np.frombuffer(store.path(entry.files[fmt.ORDER]).read_bytes(), dtype="<u4")
        lines = [SegmentReader(store, desc).raw(fmt.LINES) for desc in entry.segments]
        all_lines = np.frombuffer(b"".join(lines), dtype=_HASH)
        live = all_lines[order]
        hashes.append(live)
        keys.append(np.frombuffer(live.tobytes(), dtype="<u8")[::2])
        langs.append(np.full(order.size, li, dtype=np.int64))
        gids.append(order.astype(np.int64))
        ids[language] = SortedIds(
            *(
                store.path(entry.files[name]).read_bytes()
                for name in (fmt.IDS_BIN, fmt.IDS_OFF, fmt.IDS_GID)
            )
        )
        story_index[language] = stories.load_story_index(store, entry)
    key = np.concatenate(keys)
    by_key = np.argsort(key, kind="stable")
    files: dict[str, dict[str, Any]] = {}
    try:
        state = orjson.loads((out / fmt.BUILD_STATE).read_bytes())
        if state.get("bundle_id") == manifest.bundle_id and state.get("manifest") == _digest(
            out / fmt.MANIFEST
        ):
            for entry in state["files"]:
                records = np.frombuffer(store.path(entry["lines"]).read_bytes(), dtype=LINE_RECORD)
                files[entry["path"]] = {**entry, "lines": records}
    except (FileNotFoundError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        files = {}  # no usable state: every file is read and hashed again
    return Previous(
        key[by_key],
        np.concatenate(hashes)[by_key],
        np.concatenate(langs)[by_key],
        np.concatenate(gids)[by_key],
        ids,
        files,
        {
            language: sum(d.docs for d in manifest.languages[language].segments)
            for language in LANGUAGES
        },
        story_index,
        retracted,
    )


_HASH = np.dtype((np.void, fmt.LINE_HASH_BYTES))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(src: Path, out: Path, jobs: int | None = None, **options: Any) -> str:
    """Build `src` into `out`; returns the bundle id (options: those of build_report). Raises
    SourceError or OutputError, and in both cases `out` keeps serving what it served."""
    return build_report(src, out, jobs, **options).bundle_id


def build_report(
    src: Path,
    out: Path,
    jobs: int | None = None,
    *,
    full: bool = False,
    merge: Merge = "auto",
    wait: float = 0.0,
    publish_time: int | None = None,
) -> BuildReport:
    """`publish_time` (microseconds since the epoch) is the time the change feed records for
    this publish (docs/publishing.md, "The change feed"); by default the clock for an
    incremental build and the newest time in the sources for a from-scratch one."""
    jobs = max(1, jobs or os.cpu_count() or 1)
    with output_lock(out, wait=wait):
        check_replaceable(out)
        store = ObjectStore(out)
        existing = _served_manifest(out)
        urls = PublicUrls.from_env()
        manifest = None if full else existing
        if manifest is not None:
            problem = _reuse_problem(store, manifest)
            if problem:
                log.info("%s: %s: building from scratch", out, problem)
                manifest = None
        if manifest is not None and manifest.site.public_urls != urls.manifest():
            # Feeds and sitemap fragments hold the public URLs: all are rendered again.
            log.info("public URLs changed since %s was built: building from scratch", out)
            manifest = None
        previous = Previous.empty()
        if manifest is not None:
            try:
                previous = _load_previous(store, manifest, out)
            except (OSError, ValueError, KeyError, TypeError, BundleError) as exc:
                # The served bundle is damaged (a missing or truncated object): start over.
                log.warning("cannot build on %s (%s); building from scratch", out, exc)
                manifest = None
        if manifest is None:
            # From scratch: the sharded build (app/builder/shards.py) run in this process, the
            # plan kept in memory and every unit built straight into `out`.
            from app.builder import shards

            with _Workers(jobs) as executor:
                plan = shards.make_plan(src, urls, executor)  # SourceError: nothing written
                store.create()
                store.remove_temporaries()
                built = shards.build_units(executor, out, plan, plan.units())
                return finish_full(store, out, plan, built, existing, executor, publish_time)
        result = scan(src, previous)  # SourceError: nothing was written
        story_plan = stories.plan(result, previous, store, manifest)  # SourceError too
        store.create()
        store.remove_temporaries()
        incremental = _Build.start(out, store, existing, manifest, result, urls, publish_time)
        with _Workers(jobs) as executor:
            languages = _plan_languages(executor, incremental, story_plan, merge)
        return _commit_build(incremental, languages)


def finish_full(
    store: ObjectStore,
    out: Path,
    plan: Any,
    built: Any,
    existing: Manifest | None,
    executor: _Workers,
    publish_time: int | None,
) -> BuildReport:
    """What a from-scratch build does once every unit of its plan is a segment in `store`
    (app.builder.shards: a single build, or the merge of a sharded one): generations, site,
    and the commit of the manifest."""
    build = _Build.start(out, store, existing, None, plan.result, plan.urls, publish_time)
    result, report = build.result, build.report
    build.entries.update(built.entries)
    units = plan.units()
    segments: dict[str, list[Segment]] = {}
    deleted: dict[str, list[np.ndarray]] = {}
    for language in LANGUAGES:
        new = result.new.get(language, NewArticles())
        report.added += len(new)
        report.changed_articles[language] = [new.ids[i] for i in plan.order[language]]
        report.changed_categories[language] = list(built.categories.get(language, []))
        segments[language] = [built.segments[u.key] for u in units if u.language == language]
        deleted[language] = [np.zeros(0, dtype=np.int64) for _ in segments[language]]
        if segments[language]:
            report.changed_languages.append(language)
    report.merged = built.merged
    languages = _generations(executor, _Final(build, segments, deleted, _notices(build)))
    return _commit_build(build, languages)


def _commit_build(build: _Build, languages: dict[str, Language]) -> BuildReport:
    """The site and the manifest of `languages`, committed (app.bundle.commit)."""
    out, store, existing, result = build.out, build.store, build.existing, build.result
    entries, urls, report = build.entries, build.urls, build.report
    site, written = build_site(store, languages, urls, fmt.SITEMAP_PAGE_URLS)
    entries.update(written)
    new = Manifest.assemble(
        {language: languages[language] for language in LANGUAGES}, site, entries
    )
    report.bundle_id = new.bundle_id
    for language, names in report.changed_categories.items():
        report.changed_categories[language] = sorted(set(names))
    site_changed = existing is None or existing.site.files != new.site.files
    report.purge_keys = purge_keys(report, site_changed)
    line_objects = {}
    for entry in result.files:
        obj, _ = store.put(result.lines[entry["path"]].tobytes())
        line_objects[entry["path"]] = obj
    data = manifests.serialise(new)
    # Refused here (ManifestError) if a reader would refuse it: a component missing or
    # unknown, an object without an entry.
    manifests.parse(data, "the manifest built")
    verified = store.verified()

    def after_switch() -> None:
        state = {
            "bundle_id": new.bundle_id,
            "manifest": hashlib.sha256(data).hexdigest(),
            "files": [{**f, "lines": line_objects[f["path"]]} for f in result.files],
        }
        write_atomically(out / fmt.BUILD_STATE, orjson.dumps(state, option=orjson.OPT_INDENT_2))
        if existing is None:
            _remove_old_layout(out)

    commit(
        out,
        store,
        data,
        new,
        previous=existing,  # kept for rollback (install_bundle.py --rollback)
        hashed=[o for o in {*new.objects, *line_objects.values()} if o not in verified],
        keep=line_objects.values(),
        after_switch=after_switch,
    )
    return report


def _remove_old_layout(out: Path) -> None:
    """A from-scratch build over a bundle of the previous format: its per-language
    directories are not part of the new bundle."""
    for language in LANGUAGES:
        if (out / language).is_dir():
            shutil.rmtree(out / language, ignore_errors=True)


def _plan_languages(
    executor: _Workers, build: _Build, story_plan: stories.StoryPlan, merge: Merge
) -> dict[str, Language]:
    """New segments, merges and generations of every language of an incremental build,
    built on `build.built_on` (the manifest served); fills `build.entries` with the
    manifest entries of the objects they write. A from-scratch build: finish_full."""
    out, store, built_on, result = build.out, build.store, build.built_on, build.result
    urls, report, entries = build.urls, build.report, build.entries

    def run(fn: Any, *args: Any, work: int) -> Any:
        return executor.submit(fn, *args, work=work)

    # 1. Compile new and changed articles into new segments, in list order, in chunks, with
    # the language's pair words: those of the bundle built on, else chosen from a sample of
    # the new articles (app/search/pair_words.py).
    compiles: dict[str, list[Any]] = {lang: [] for lang in LANGUAGES}
    pending_new: dict[str, list[NewArticle | stories.KeptArticle]] = {}
    for language in LANGUAGES:
        pending = result.new.get(language, NewArticles())
        translations = story_plan.new.get(language, {})
        new: list[NewArticle | stories.KeptArticle] = [
            pending.get(i, result.paths, language, translations.get(i, ()))
            for i in pending.list_order()
        ]
        report.added += len(pending)
        del pending
        again = story_plan.again.get(language, [])
        if again:  # served articles whose translations changed join the new segment
            new = sorted([*new, *again], key=lambda a: (-a.published, a.id))
        pending_new[language] = new
        report.changed_articles[language] = [a.id for a in new]
        report.changed_categories[language] = []
    pair_lists = {
        language: _pair_list(store, built_on, language, new, run)
        for language, new in pending_new.items()
    }
    for language, new in pending_new.items():
        size = CHUNK_ARTICLES[language in CJK_LANGUAGES]
        pair_list = pair_lists[language].result()
        for start in range(0, len(new), size):
            compiles[language].append(
                run(
                    _compile_job,
                    str(out),
                    language,
                    new[start : start + size],
                    urls,
                    pair_list,
                    work=size,
                )
            )
    del pending_new
    # 2. Old segments with their deleted documents: every gid not kept is deleted.
    segments: dict[str, list[Segment]] = {}
    deleted: dict[str, list[np.ndarray]] = {}
    for language in LANGUAGES:
        segments[language], deleted[language] = [], []
        if built_on is None:
            continue
        meta = built_on.languages[language]
        order = np.frombuffer(store.path(meta.files[fmt.ORDER]).read_bytes(), dtype="<u4")
        live = result.kept[language]
        kept = set(np.flatnonzero(live).tolist())
        replaced = result.replaced.get(language, set())
        report.replaced += len(replaced)
        served = set(order.tolist())
        retracted = served - kept - replaced
        report.retracted += len(retracted)
        base = 0
        for desc in meta.segments:
            segments[language].append(desc)
            deleted[language].append(np.flatnonzero(~live[base : base + desc.docs]))
            base += desc.docs
        if served != kept:
            report.changed_languages.append(language)
        report.changed_articles[language] += [i for i in _ids_of(store, meta, retracted)]
        report.changed_categories[language] += _categories_of(store, meta, retracted | replaced)
    notices = _notices(build)
    for language in LANGUAGES:
        for future in compiles[language]:
            desc, written = future.result()
            entries.update(written)
            segments[language].append(desc)
            deleted[language].append(np.zeros(0, dtype=np.int64))
            report.changed_categories[language] += SegmentReader(store, desc).categories()
        if compiles[language] and language not in report.changed_languages:
            report.changed_languages.append(language)
    # 3. Merges, as the policy says (a from-scratch build merges each language into one).
    plans = {
        language: policy.plan(
            [d.docs for d in segments[language]],
            [int(x.size) for x in deleted[language]],
            merge,
        )
        for language in LANGUAGES
    }
    merges = {
        language: [
            (
                group,
                run(
                    _merge_job,
                    str(out),
                    language,
                    [(segments[language][i], deleted[language][i]) for i in group],
                    work=sum(segments[language][i].docs for i in group) // 4,
                ),
            )
            for group in plans[language]
        ]
        for language in LANGUAGES
    }
    for language in LANGUAGES:
        for group, future in reversed(merges[language]):
            desc, written = future.result()
            entries.update(written)
            report.merged += 1
            first = min(group)
            for i in sorted(group, reverse=True):
                del segments[language][i]
                del deleted[language][i]
            segments[language].insert(first, desc)
            deleted[language].insert(first, np.zeros(0, dtype=np.int64))
    return _generations(executor, _Final(build, segments, deleted, notices))


def _notices(build: _Build) -> dict[str, list[retractions.RetractedArticle]]:
    """Each language's retraction notices; counts and reports those added, changed or
    withdrawn."""
    store, built_on, result, report = build.store, build.built_on, build.result, build.report
    # Retraction notices: a new or changed one, or one withdrawn, changes the article's URL
    # (410 or not), the corrections log, and (for a served article) its lists.
    notices: dict[str, list[retractions.RetractedArticle]] = {}
    for language in LANGUAGES:
        lines = result.retractions.get(language, [])
        notices[language] = [r for _, _, r, _ in lines]
        now = {r.id: r for r in notices[language]}
        before = (
            {r.id: r for r in retractions.load(store, built_on.languages[language], language)}
            if built_on is not None
            else {}
        )
        changed = sorted(
            {i for i, r in now.items() if before.get(i) != r} | {i for i in before if i not in now}
        )
        report.retractions += len(changed)
        if changed and built_on is not None:
            report.changed_articles[language] += changed
            if language not in report.changed_languages:
                report.changed_languages.append(language)
    return notices


@dataclass(frozen=True, slots=True)
class _Build:
    """One build from its scan to its commit: the output and its store, the manifest served
    there (`existing`) and the one built on (`built_on`: None from scratch), the scan's
    result, the public URLs, the report it fills, the object entries of the manifest to
    commit, and the change feed's time (None: the clock, or the sources' newest time from
    scratch)."""

    out: Path
    store: ObjectStore
    existing: Manifest | None
    built_on: Manifest | None
    result: Any
    urls: PublicUrls
    report: BuildReport
    entries: dict[str, ObjectEntry]
    publish_time: int | None

    @classmethod
    def start(
        cls,
        out: Path,
        store: ObjectStore,
        existing: Manifest | None,
        built_on: Manifest | None,
        result: Any,
        urls: PublicUrls,
        publish_time: int | None,
    ) -> _Build:
        """A build's start: an empty report, and the served bundle's object entries (a build
        adds to them; the commit keeps those the new manifest names)."""
        entries = dict(existing.objects) if existing is not None else {}
        report = BuildReport("", incremental=built_on is not None)
        return cls(out, store, existing, built_on, result, urls, report, entries, publish_time)

    @property
    def full(self) -> bool:
        return self.built_on is None


@dataclass(frozen=True, slots=True)
class _Final:
    """What a build's generations are made from, once its segments are final: each
    language's segments with their deleted documents, and its retraction notices."""

    build: _Build
    segments: dict[str, list[Segment]]
    deleted: dict[str, list[np.ndarray]]
    notices: dict[str, list[retractions.RetractedArticle]]


def _generations(executor: _Workers, final: _Final) -> dict[str, Language]:
    """The generation of every language over its final segments, in worker processes;
    fills `final.entries` with those of the objects they write."""
    build, segments = final.build, final.segments
    store, built_on = build.store, build.built_on
    # Every segment of a language must number the same pair words (app/search/pair_words.py),
    # or the server would refuse the bundle: refuse it here, before anything is committed.
    for language in LANGUAGES:
        lists = {_pair_words_of(store, desc) for desc in segments[language]}
        if len(lists) > 1:
            raise BundleError(f"language {language}: segments index different pair words")
    publish = _publish(final)
    # 4. Generations: each sorts every live article of its language (and renders its changed
    # feeds), so on a large archive they run side by side in worker processes.
    generations = {
        language: executor.submit(
            build_generation,
            store,
            language,
            segments[language],
            final.deleted[language],
            build.urls,
            None if built_on is None else built_on.languages[language],
            final.notices[language],
            publish,
            work=sum(desc.docs for desc in segments[language]),
        )
        for language in LANGUAGES
    }
    languages = {}
    for language in LANGUAGES:
        meta, written = generations[language].result()
        build.entries.update(written)
        languages[language] = meta
        build.report.segments[language] = len(segments[language])
    return languages


def _publish(final: _Final) -> changes.Publish:
    """What the change feed records of this build (app/builder/changes.py): the lineage it
    belongs to, its time, the retention, and each language's candidate ids.

    A from-scratch build starts a lineage. It must be byte-identical for the same input, so
    its time is the newest time in the sources (an article's `updated_at`, a retraction's or
    a correction's `at`) and its lineage a digest of that time and of the source lines. An
    incremental build keeps the lineage and is stamped by the clock (whole seconds), never
    earlier than the lineage's last publish."""
    build, segments, notices = final.build, final.segments, final.notices
    store, built_on, existing, result = build.store, build.built_on, build.existing, build.result
    report, publish_time, full = build.report, build.publish_time, build.full
    retention = changes.DAY_US * int(os.environ.get("NEWS_CHANGES_RETENTION_DAYS", "90"))
    if not full and built_on is not None:
        metas = [
            orjson.loads(store.path(meta.files[fmt.CHANGES_JSON]).read_bytes())
            for meta in built_on.languages.values()
        ]
        last = max((p[1] for m in metas for p in m["publishes"][-1:]), default=0)
        at = publish_time if publish_time is not None else int(time.time()) * 1_000_000
        candidates = {k: list(v) for k, v in report.changed_articles.items() if v}
        return changes.Publish(
            metas[0]["lineage"], max(at, last), retention, fresh=False, candidates=candidates
        )
    if publish_time is None:
        newest = [
            int(np.frombuffer(SegmentReader(store, desc).raw(fmt.UPDATED), dtype="<i8").max())
            for descs in segments.values()
            for desc in descs
            if desc.docs
        ]
        for notes in notices.values():
            for r in notes:
                newest += [r.at_us, *(us for us, _, _ in r.corrections)]
        publish_time = max(newest, default=0)
    digest = hashlib.blake2b(b"%d\n" % publish_time, digest_size=change_log.LINEAGE_BYTES)
    counts = {}
    for language in LANGUAGES:
        new = result.new.get(language, NewArticles())
        lines = result.retractions.get(language, [])
        digest.update(f"{language}\0{len(new)}\0{len(lines)}\n".encode())
        digest.update(bytes(new.hashes))
        digest.update(b"".join(r.hash for _, _, r, _ in lines))
        counts[language] = len(new) + len(lines)
    lineage = digest.hexdigest()
    if existing is not None:
        # A --full build over a bundle of the lineage it would start, whose history went on
        # (the sources came back to where it began): a new lineage all the same, or the
        # cursors of the old history would be taken for this one's.
        try:
            old = {
                code: orjson.loads(store.path(meta.files[fmt.CHANGES_JSON]).read_bytes())
                for code, meta in existing.languages.items()
            }
        except (OSError, ValueError, KeyError):
            old = {}
        if any(m.get("lineage") == lineage for m in old.values()) and any(
            m.get("head") != counts[code] for code, m in old.items()
        ):
            digest.update(orjson.dumps(sorted((c, m.get("head")) for c, m in old.items())))
            lineage = digest.hexdigest()
    return changes.Publish(lineage, publish_time, retention, fresh=True, candidates={})


def _segments_holding(
    store: ObjectStore, meta: Language, gids: set[int]
) -> Iterator[tuple[SegmentReader, list[int]]]:
    """Each segment of a language that holds some of `gids`, with their local numbers."""
    base = 0
    for desc in meta.segments:
        mine = [g - base for g in gids if base <= g < base + desc.docs]
        if mine:
            yield SegmentReader(store, desc), mine
        base += desc.docs


def _categories_of(store: ObjectStore, meta: Language, gids: set[int]) -> list[str]:
    out: list[str] = []
    for reader, mine in _segments_holding(store, meta, gids):
        categories = reader.categories()
        out.extend(categories[i] for i in mine)
    return out


def _ids_of(store: ObjectStore, meta: Language, gids: set[int]) -> list[str]:
    out: list[str] = []
    for reader, mine in _segments_holding(store, meta, gids):
        ids = reader.ids()
        out.extend(ids[i].decode("utf-8") for i in mine)
    return sorted(out)


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Workers:
    """Runs compiles and merges in worker processes when there is enough work to pay for
    them, inline otherwise (a 100-article publish is faster without a pool).

    Workers come from a forkserver started before any article is held in memory, so they do
    not inherit (and the memory figures do not double-count) the builder's own state.
    """

    # Below this many articles a job runs inline. Under a chunk (CHUNK_ARTICLES), or a full
    # build's compiles would run one after the other in the builder's process.
    INLINE = 500

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def submit(self, fn: Any, *args: Any, work: int) -> Any:
        if self.jobs <= 1 or work < self.INLINE:
            return _Done(fn(*args))
        if self._pool is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["app.builder.builder"])
            # A fresh worker per job: numpy's peak of one compile is not kept (as heap that
            # the allocator does not return) through the next.
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=context, max_tasks_per_child=1
            )
        return self._pool.submit(fn, *args)
