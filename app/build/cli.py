"""`python scripts/build_bundles.py --src SRC_DIR --out OUT_DIR` (docs/publishing.md).

When OUT_DIR already holds a bundle the build is incremental: unchanged source lines are
recognised by their hash and kept, new and changed articles become a new segment, and an
article whose line is gone is retracted. `--full` builds from scratch. Either way the result
serves exactly what a from-scratch build of the same sources serves.

Order of writes, so that a build killed at any point leaves a servable bundle: every new
object (fsynced), then the verified record, then `manifest.json` by an atomic rename (the
commit point), then the build state; unreferenced objects are deleted last.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import shutil
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from app import surrogate_keys
from app.build import policy, retractions, stories
from app.build.compile import compile_segment
from app.build.generation import build_generation
from app.build.merge import SegmentReader, merge_segments
from app.build.records import SourceError
from app.build.site import build_site
from app.build.sources import LINE_RECORD, NewArticle, NewArticles, Previous, scan
from app.build.writer import OutputError, check_replaceable, output_lock
from app.bundle import format as fmt
from app.bundle.objects import ObjectEntry, ObjectStore, manifest_objects, write_atomically
from app.bundle.reader import BundleError, SortedIds, bundle_id_for, check_objects
from app.compression import CODEC_ID
from app.languages import LANGUAGES
from app.public_urls import PublicUrls
from app.search import layout
from app.search.analyzers import ANALYZER_VERSION, CJK_LANGUAGES

BUILD_STATE = "build-state.json"
# Articles per newly compiled segment: compiling 2,000 CJK articles peaks at about 550 MB
# (numpy n-gram arrays), so two compiles in parallel and the builder stay under 2 GB.
CHUNK_ARTICLES = {True: 2000, False: 10000}

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


def _compile_job(
    out: str,
    language: str,
    articles: list[NewArticle | stories.KeptArticle],
    urls: PublicUrls,
) -> tuple[dict, dict]:
    store = ObjectStore(Path(out))
    handles: dict[Path, Any] = {}
    try:
        records = []
        for a in articles:
            fh = None
            if a.path is not None:  # a KeptArticle is read from the bundle, not a file
                fh = handles.get(a.path) or handles.setdefault(a.path, open(a.path, "rb"))  # noqa: SIM115
            records.append(a.read(fh))
    finally:
        for fh in handles.values():
            fh.close()
    files = compile_segment(language, records, [a.hash for a in articles], urls)
    desc_files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}
    for name in sorted(files):
        obj, entry = store.put(files[name])
        desc_files[name] = obj
        entries[obj] = entry
    return {"docs": len(records), "files": desc_files}, entries


def _merge_job(
    out: str, language: str, inputs: list[tuple[dict[str, Any], np.ndarray]]
) -> tuple[dict, dict]:
    return merge_segments(ObjectStore(Path(out)), language, inputs)


def _read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        manifest = orjson.loads((out / fmt.MANIFEST).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format_version") != fmt.FORMAT_VERSION:
        return None  # an older layout (or garbage): build from scratch
    languages = manifest.get("languages")
    if not isinstance(languages, dict) or any(
        not isinstance(meta, dict) or meta.get("codec") != CODEC_ID for meta in languages.values()
    ):
        return None  # compressed with other levels or libraries: build from scratch
    return manifest


def _index_current(store: ObjectStore, manifest: dict[str, Any] | None) -> bool:
    """Whether every segment's search index has this code's format and analyser: segments
    are reused as they are, so an index of another format (or analysed by another version)
    means building from scratch, not mixing formats in one bundle."""
    if manifest is None:
        return True
    try:
        for meta in manifest["languages"].values():
            for desc in meta["segments"]:
                index = orjson.loads(store.path(desc["files"][layout.META]).read_bytes())
                if (index.get("format"), index.get("analyzer")) != (
                    layout.FORMAT_VERSION,
                    ANALYZER_VERSION,
                ):
                    return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True  # damaged: _load_previous reports it and starts over
    return True


def _load_previous(store: ObjectStore, manifest: dict[str, Any], out: Path) -> Previous:
    """Line hashes, gids and ids of every served article, and the per-file build state."""
    check_objects(out, manifest)  # BundleError: a damaged bundle is built again from scratch
    keys, hashes, langs, gids = [], [], [], []
    ids: dict[str, SortedIds] = {}
    story_index: dict[str, SortedIds] = {}
    retracted: dict[bytes, retractions.RetractedArticle] = {}
    for li, language in enumerate(LANGUAGES):
        meta = manifest["languages"][language]
        retracted.update((r.hash, r) for r in retractions.load(store, meta, language))
        order = np.frombuffer(store.path(meta["files"][fmt.ORDER]).read_bytes(), dtype="<u4")
        lines = [SegmentReader(store, desc).raw(fmt.LINES) for desc in meta["segments"]]
        all_lines = np.frombuffer(b"".join(lines), dtype=_HASH)
        live = all_lines[order]
        hashes.append(live)
        keys.append(np.frombuffer(live.tobytes(), dtype="<u8")[::2])
        langs.append(np.full(order.size, li, dtype=np.int64))
        gids.append(order.astype(np.int64))
        ids[language] = SortedIds(
            *(
                store.path(meta["files"][name]).read_bytes()
                for name in (fmt.IDS_BIN, fmt.IDS_OFF, fmt.IDS_GID)
            )
        )
        story_index[language] = stories.load_story_index(store, meta)
    key = np.concatenate(keys)
    by_key = np.argsort(key, kind="stable")
    files: dict[str, dict[str, Any]] = {}
    try:
        state = orjson.loads((out / BUILD_STATE).read_bytes())
        if state.get("bundle_id") == manifest["bundle_id"] and state.get("manifest") == _digest(
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
            language: sum(d["docs"] for d in manifest["languages"][language]["segments"])
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
) -> BuildReport:
    jobs = max(1, jobs or os.cpu_count() or 1)
    with output_lock(out, wait=wait):
        check_replaceable(out)
        store = ObjectStore(out)
        existing = _read_manifest(out)
        urls = PublicUrls.from_env()
        manifest = None if full or not _index_current(store, existing) else existing
        if manifest is not None and manifest.get("site", {}).get("public_urls") != urls.manifest():
            # Feeds and sitemap fragments hold the public URLs: all are rendered again.
            print(f"public URLs changed since {out} was built: building from scratch")
            manifest = None
        previous = Previous.empty()
        if manifest is not None:
            try:
                previous = _load_previous(store, manifest, out)
            except (OSError, ValueError, KeyError, TypeError, BundleError) as exc:
                # The served bundle is damaged (a missing or truncated object): start over.
                print(
                    f"warning: cannot build on {out} ({exc}); building from scratch",
                    file=sys.stderr,
                )
                manifest = None
        result = scan(src, previous)  # SourceError: nothing was written
        story_plan = stories.plan(result, previous, store, manifest)  # SourceError too
        store.create()
        store.remove_temporaries()
        report = BuildReport("", incremental=manifest is not None)

        with _Workers(jobs) as executor:
            entries = dict(manifest_objects(existing or {}))
            languages = _plan_languages(
                executor,
                store,
                out,
                manifest,
                result,
                story_plan,
                urls,
                merge,
                report,
                entries,
                full=manifest is None,
            )
        site, written = build_site(store, languages, urls, fmt.SITEMAP_PAGE_URLS)
        entries.update(written)
        bundle_id = bundle_id_for(languages)
        report.bundle_id = bundle_id
        for language, names in report.changed_categories.items():
            report.changed_categories[language] = sorted(set(names))
        site_changed = existing is None or existing.get("site", {}).get("files") != site["files"]
        report.purge_keys = purge_keys(report, site_changed)
        objects = {
            obj: entries[obj] for meta in languages.values() for obj in _language_objects(meta)
        }
        objects.update((obj, entries[obj]) for obj in site["files"].values())
        line_objects = {}
        for entry in result.files:
            obj, _ = store.put(result.lines[entry["path"]].tobytes())
            line_objects[entry["path"]] = obj
        new_manifest = {
            "format": fmt.FORMAT_NAME,
            "format_version": fmt.FORMAT_VERSION,
            "bundle_id": bundle_id,
            "languages": languages,
            "site": site,
            "objects": dict(sorted(objects.items())),
        }
        data = orjson.dumps(new_manifest, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
        previous_objects = set(manifest_objects(existing or {}))
        keep = set(objects) | previous_objects | set(line_objects.values())
        verified = store.verified()
        store.record_verified(
            [o for o in set(objects) | set(line_objects.values()) if o not in verified], keep
        )
        if existing is not None:  # kept for rollback (install_bundle.py --rollback)
            write_atomically(out / fmt.PREVIOUS_MANIFEST, (out / fmt.MANIFEST).read_bytes())
        write_atomically(out / fmt.MANIFEST, data)  # the commit point
        state = {
            "bundle_id": bundle_id,
            "manifest": _digest(out / fmt.MANIFEST),
            "files": [{**f, "lines": line_objects[f["path"]]} for f in result.files],
        }
        write_atomically(out / BUILD_STATE, orjson.dumps(state, option=orjson.OPT_INDENT_2))
        if existing is None:
            _remove_old_layout(out)
        store.collect_garbage(keep)
        return report


def _language_objects(meta: dict[str, Any]) -> list[str]:
    objs = [*meta["files"].values(), *meta["feeds"].values()]
    for desc in meta["segments"]:
        objs.extend(desc["files"].values())
    return objs


def _remove_old_layout(out: Path) -> None:
    """A from-scratch build over a bundle of the previous format: its per-language
    directories are not part of the new bundle."""
    for language in LANGUAGES:
        if (out / language).is_dir():
            shutil.rmtree(out / language, ignore_errors=True)


def _plan_languages(
    executor: _Workers,
    store: ObjectStore,
    out: Path,
    manifest: dict[str, Any] | None,
    result: Any,
    story_plan: stories.StoryPlan,
    urls: PublicUrls,
    merge: Merge,
    report: BuildReport,
    entries: dict[str, ObjectEntry],
    *,
    full: bool,
) -> dict[str, dict[str, Any]]:
    """New segments, merges and generations of every language; fills `entries` with the
    manifest entries of the objects they write."""

    def run(fn: Any, *args: Any, work: int) -> Any:
        return executor.submit(fn, *args, work=work)

    # 1. Compile new and changed articles into new segments, in list order, in chunks.
    compiles: dict[str, list[Any]] = {lang: [] for lang in LANGUAGES}
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
        size = CHUNK_ARTICLES[language in CJK_LANGUAGES]
        for start in range(0, len(new), size):
            compiles[language].append(
                run(_compile_job, str(out), language, new[start : start + size], urls, work=size)
            )
        report.changed_articles[language] = [a.id for a in new]
        report.changed_categories[language] = []
    # 2. Old segments with their deleted documents: every gid not kept is deleted.
    segments: dict[str, list[dict[str, Any]]] = {}
    deleted: dict[str, list[np.ndarray]] = {}
    for language in LANGUAGES:
        segments[language], deleted[language] = [], []
        if manifest is None:
            continue
        meta = manifest["languages"][language]
        order = np.frombuffer(store.path(meta["files"][fmt.ORDER]).read_bytes(), dtype="<u4")
        live = result.kept[language]
        kept = set(np.flatnonzero(live).tolist())
        replaced = result.replaced.get(language, set())
        report.replaced += len(replaced)
        served = set(order.tolist())
        retracted = served - kept - replaced
        report.retracted += len(retracted)
        base = 0
        for desc in meta["segments"]:
            segments[language].append(desc)
            deleted[language].append(np.flatnonzero(~live[base : base + desc["docs"]]))
            base += desc["docs"]
        if served != kept:
            report.changed_languages.append(language)
        report.changed_articles[language] += [i for i in _ids_of(store, meta, retracted)]
        report.changed_categories[language] += _categories_of(store, meta, retracted | replaced)
    # Retraction notices: a new or changed one, or one withdrawn, changes the article's URL
    # (410 or not), the corrections log, and (for a served article) its lists.
    notices: dict[str, list[retractions.RetractedArticle]] = {}
    for language in LANGUAGES:
        lines = result.retractions.get(language, [])
        notices[language] = [r for _, _, r, _ in lines]
        now = {r.id: r for r in notices[language]}
        before = (
            {r.id: r for r in retractions.load(store, manifest["languages"][language], language)}
            if manifest is not None
            else {}
        )
        changed = sorted(
            {i for i, r in now.items() if before.get(i) != r} | {i for i in before if i not in now}
        )
        report.retractions += len(changed)
        if changed and manifest is not None:
            report.changed_articles[language] += changed
            if language not in report.changed_languages:
                report.changed_languages.append(language)
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
            [d["docs"] for d in segments[language]],
            [int(x.size) for x in deleted[language]],
            "all" if full else merge,
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
                    work=sum(segments[language][i]["docs"] for i in group) // 4,
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
    # 4. Generations: each sorts every live article of its language (and renders its changed
    # feeds), so on a large archive they run side by side in worker processes.
    generations = {
        language: executor.submit(
            build_generation,
            store,
            language,
            segments[language],
            deleted[language],
            urls,
            None if manifest is None else manifest["languages"][language],
            notices[language],
            work=sum(int(desc["docs"]) for desc in segments[language]),
        )
        for language in LANGUAGES
    }
    languages = {}
    for language in LANGUAGES:
        meta, written = generations[language].result()
        entries.update(written)
        languages[language] = meta
        report.segments[language] = len(segments[language])
    return languages


def _segments_holding(
    store: ObjectStore, meta: dict[str, Any], gids: set[int]
) -> Iterator[tuple[SegmentReader, list[int]]]:
    """Each segment of a language that holds some of `gids`, with their local numbers."""
    base = 0
    for desc in meta["segments"]:
        mine = [g - base for g in gids if base <= g < base + desc["docs"]]
        if mine:
            yield SegmentReader(store, desc), mine
        base += desc["docs"]


def _categories_of(store: ObjectStore, meta: dict[str, Any], gids: set[int]) -> list[str]:
    out: list[str] = []
    for reader, mine in _segments_holding(store, meta, gids):
        categories = reader.categories()
        out.extend(categories[i] for i in mine)
    return out


def _ids_of(store: ObjectStore, meta: dict[str, Any], gids: set[int]) -> list[str]:
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

    # Below this many articles a job runs inline.
    INLINE = 1500

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
            context.set_forkserver_preload(["app.build.cli"])
            # A fresh worker per job: numpy's peak of one compile is not kept (as heap that
            # the allocator does not return) through the next.
            self._pool = ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=context, max_tasks_per_child=1
            )
        return self._pool.submit(fn, *args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="build_bundles.py",
        description="Compile source JSONL articles into a servable bundle directory; "
        "incremental when OUT already holds a bundle (docs/publishing.md).",
    )
    parser.add_argument("--src", required=True, type=Path, help="directory of *.jsonl sources")
    parser.add_argument("--out", required=True, type=Path, help="bundle directory to update")
    parser.add_argument("--full", action="store_true", help="build from scratch")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--merge", action="store_true", help="merge every language into one segment")
    group.add_argument(
        "--no-merge", action="store_true", help="never merge segments (for measurements)"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="parallel compiles and merges (default: CPUs)"
    )
    parser.add_argument(
        "--wait", type=float, default=600.0, help="seconds to wait for another build (600)"
    )
    parser.add_argument("--report", type=Path, help="write what changed as JSON to this file")
    parser.add_argument(
        "--purge-keys",
        type=Path,
        help="write the surrogate keys a CDN must purge, one a line, to this file ('-': stdout)",
    )
    args = parser.parse_args(argv)
    merge: Merge = "all" if args.merge else "none" if args.no_merge else "auto"
    started = time.monotonic()
    try:
        report = build_report(
            args.src, args.out, args.jobs, full=args.full, merge=merge, wait=args.wait
        )
    except SourceError as exc:
        print(f"build failed: {len(exc.problems)} problem(s) in {args.src}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        print(f"{args.out} was left unchanged.", file=sys.stderr)
        return 1
    except (OutputError, OSError) as exc:
        print(f"build failed: {exc}\n{args.out} was left unchanged.", file=sys.stderr)
        return 1
    kind = "incremental" if report.incremental else "full"
    print(
        f"built bundle {report.bundle_id} in {args.out} ({kind}, "
        f"{time.monotonic() - started:.2f} s): {report.added} new or changed, "
        f"{report.retracted} removed, {report.retractions} retraction notice(s) changed, "
        f"{report.merged} merged segment(s)"
    )
    print(
        f"CDN: purge {len(report.purge_keys)} surrogate key(s)"
        + (f": {' '.join(report.purge_keys)}" if len(report.purge_keys) <= 20 else "")
    )
    if args.report:
        args.report.write_bytes(orjson.dumps(report.__dict__, option=orjson.OPT_INDENT_2))
    if args.purge_keys:
        text = "".join(f"{key}\n" for key in report.purge_keys)
        if str(args.purge_keys) == "-":
            sys.stdout.write(text)
        else:
            args.purge_keys.write_text(text)
    return 0
