"""The change feed's log (docs/api.md §13; the format is app/bundle/changes.py), written with
each language's generation.

A from-scratch build starts a lineage: every served article is an `upsert` and every
retraction a `retracted`, by id, at the build's time. An incremental build keeps the
lineage's log and looks only at the ids the publish touched (the builder's candidates: new
and changed lines, articles compiled again for their translations, removed lines,
retraction notices added, changed or withdrawn): an id whose answer to GET changed (its ETag,
a notice's ETag, or its status) gets a new entry at the end, which replaces its old one.
A line that only moved, or changed without changing what GET answers, records nothing.
Every other entry is kept, its position remapped to the new generation.

Retention: the publishes older than `retention` before the language's newest publish are
dropped; `floor` becomes the last sequence number they gave, and `removed` entries up to it
are forgotten (`upsert` and `retracted` entries are the state of a served id: they stay).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from app.builder.retractions import RetractedArticle
from app.bundle import changes as log
from app.bundle import format as fmt
from app.bundle.errors import BundleError
from app.bundle.id_index import SortedIds
from app.bundle.manifest import Language, Segment
from app.bundle.objects import ObjectStore
from app.bundle.segment import SegmentReader

DAY_US = 86_400 * 1_000_000


@dataclass(frozen=True, slots=True)
class Publish:
    """What every language's log records of one build."""

    lineage: str  # hex, LINEAGE_BYTES
    at: int  # microseconds: the time of this publish
    retention: int  # microseconds of publishes kept before the newest
    fresh: bool  # from scratch: a new lineage, no log to build on
    candidates: Mapping[str, Sequence[str]]  # language -> ids the publish may have changed


_Entry = tuple[int, int, int]  # (seq, kind, at)
State = tuple[int, object] | None  # (kind, ETag) or None: not served (404)


def _packed(ids: list[bytes]) -> tuple[bytes, bytes]:
    off = np.zeros(len(ids) + 1, dtype="<u8")
    if ids:
        off[1:] = np.cumsum([len(i) for i in ids])
    return b"".join(ids), off.tobytes()


def _records(seq: np.ndarray, kind: np.ndarray, ref: np.ndarray, at: np.ndarray) -> bytes:
    order = np.argsort(seq, kind="stable")
    records = np.empty(seq.size, dtype=log.CHANGE_RECORD)
    records["seq"] = seq[order]
    records["ref"] = (kind[order].astype(np.uint32) << log.KIND_SHIFT) | ref[order].astype(
        np.uint32
    )
    records["at"] = at[order]
    return records.tobytes()


def _files(
    records: bytes, removed: list[bytes], lineage: str, head: int, floor: int, publishes: list
) -> list[tuple[str, bytes]]:
    blob, off = _packed(removed)
    return [
        (fmt.CHANGES_LOG, records),
        (fmt.CHANGES_IDS_BIN, blob),
        (fmt.CHANGES_IDS_OFF, off),
        (fmt.CHANGES_JSON, log.log_meta(lineage, head, floor, publishes)),
    ]


def build_files(
    store: ObjectStore,
    language: str,
    publish: Publish,
    previous: Language | None,
    served: list[bytes],
    gids: list[int],
    etags: np.ndarray,
    retracted: list[RetractedArticle],
) -> list[tuple[str, bytes]]:
    """The change feed's generation files of `language`. `served`: the ids this generation
    serves, sorted bytewise, with the gid of each (`gids`); `etags` every gid's ETag;
    `retracted` its retractions; `previous` the language's entry built on (None from
    scratch)."""
    ret_ids = sorted(r.id for r in retracted)
    if publish.fresh or previous is None:
        n, k = len(served), len(ret_ids)
        records = _records(
            np.arange(1, n + k + 1, dtype=np.int64),
            np.concatenate((np.full(n, log.UPSERT), np.full(k, log.RETRACTED))),
            np.concatenate((np.arange(n), np.arange(k))),
            np.full(n + k, publish.at, dtype=np.int64),
        )
        first = [[n + k, publish.at]] if n + k else []
        return _files(records, [], publish.lineage, n + k, 0, first)
    files = previous.files
    candidates = sorted(set(publish.candidates.get(language, ())), key=_key)
    if not candidates:  # nothing touched: the same log, the same objects
        return [
            (name, store.path(files[name]).read_bytes())
            for name in (
                fmt.CHANGES_LOG,
                fmt.CHANGES_IDS_BIN,
                fmt.CHANGES_IDS_OFF,
                fmt.CHANGES_JSON,
            )
        ]
    meta = orjson.loads(store.path(files[fmt.CHANGES_JSON]).read_bytes())
    head, floor = int(meta["head"]), int(meta["floor"])
    publishes: list[list[int]] = [list(p) for p in meta["publishes"]]
    old = np.frombuffer(store.path(files[fmt.CHANGES_LOG]).read_bytes(), dtype=log.CHANGE_RECORD)
    old_seq = old["seq"].astype(np.int64)
    old_kind = (old["ref"] >> log.KIND_SHIFT).astype(np.int64)
    old_ref = (old["ref"] & log.REF_MASK).astype(np.int64)
    old_at = old["at"]
    old_ids = SortedIds(
        *(store.path(files[n]).read_bytes() for n in (fmt.IDS_BIN, fmt.IDS_OFF, fmt.IDS_GID))
    )
    old_gids = old_ids.gids()
    old_retractions = orjson.loads(store.path(files[fmt.RETRACTIONS_JSON]).read_bytes())
    old_ret_ids = [r["id"] for r in old_retractions]
    old_notice = {r["id"]: r["notice"]["etag"] for r in old_retractions}
    removed_blob = store.path(files[fmt.CHANGES_IDS_BIN]).read_bytes()
    removed_off = np.frombuffer(store.path(files[fmt.CHANGES_IDS_OFF]).read_bytes(), dtype="<u8")
    old_removed = [
        removed_blob[int(a) : int(b)].decode("utf-8", "surrogatepass")
        for a, b in itertools.pairwise(removed_off.tolist())
    ]
    old_etag = _EtagsByGid(store, previous.segments)
    new_notice = {r.id: fmt.content_digest(r.notice()).hex() for r in retracted}
    new_ret_index = {i: n for n, i in enumerate(ret_ids)}

    # Each candidate's state before and after, and its served positions.
    before: dict[str, State] = {}
    after: dict[str, State] = {}
    old_pos: dict[str, int] = {}
    new_pos: dict[str, int] = {}
    for i in candidates:
        b = i.encode("utf-8", "surrogatepass")
        p = old_ids.index(b)
        if p >= 0:
            old_pos[i] = p
            before[i] = (log.UPSERT, old_etag(old_gids[p]))
        elif i in old_notice:
            before[i] = (log.RETRACTED, old_notice[i])
        else:
            before[i] = None
        q = bisect.bisect_left(served, b)
        if q < len(served) and served[q] == b:
            new_pos[i] = q
            after[i] = (log.UPSERT, etags[gids[q]].tobytes())
        elif i in new_notice:
            after[i] = (log.RETRACTED, new_notice[i])
        else:
            after[i] = None

    # Served ids that are not candidates are the same ids, in the same order, before and after.
    gone = np.asarray(sorted(old_pos.values()), dtype=np.int64)
    come = np.asarray(sorted(new_pos.values()), dtype=np.int64)
    kept_old = np.setdiff1d(np.arange(len(old_ids)), gone)
    kept_new = np.setdiff1d(np.arange(len(served)), come)
    if kept_old.size != kept_new.size:
        raise BundleError(f"language {language}: the change candidates miss a served article")
    moved = np.full(len(old_ids), -1, dtype=np.int64)
    moved[kept_old] = kept_new

    extra: list[tuple[int, int, int, int]] = []  # (seq, kind, ref, at)
    seqs: list[np.ndarray] = []
    kinds: list[np.ndarray] = []
    refs: list[np.ndarray] = []
    ats: list[np.ndarray] = []
    up = old_kind == log.UPSERT
    target = np.full(old_ref.size, -1, dtype=np.int64)
    target[up] = moved[old_ref[up]]
    keep = up & (target >= 0)
    seqs.append(old_seq[keep])
    kinds.append(old_kind[keep])
    refs.append(target[keep])
    ats.append(old_at[keep])
    # Old entries of candidates, and every retracted and removed entry, by id.
    entry: dict[str, _Entry] = {}
    position_id = {p: i for i, p in old_pos.items()}
    for n in np.flatnonzero(up & (target < 0)).tolist():
        entry[position_id[int(old_ref[n])]] = (int(old_seq[n]), log.UPSERT, int(old_at[n]))
    removed: dict[str, _Entry] = {}
    for n in np.flatnonzero(~up).tolist():
        was, where = int(old_kind[n]), int(old_ref[n])
        i = old_ret_ids[where] if was == log.RETRACTED else old_removed[where]
        e = (int(old_seq[n]), was, int(old_at[n]))
        if i in before:
            entry[i] = e
        elif was == log.RETRACTED:
            extra.append((e[0], was, new_ret_index[i], e[2]))
        else:
            removed[i] = e
    changed = 0
    for i in candidates:
        now = after[i]
        if now == before[i] and i in entry:
            e = entry[i]
        elif now == before[i] and now is None:
            continue  # never served, or removed and still gone: nothing to say
        else:
            changed += 1
            e = (head + changed, log.REMOVED if now is None else now[0], publish.at)
        if e[1] == log.REMOVED:
            removed[i] = e
            continue
        extra.append((e[0], e[1], new_pos[i] if e[1] == log.UPSERT else new_ret_index[i], e[2]))
    if changed:
        head += changed
        if head > log.MAX_SEQ:
            raise BundleError(f"language {language}: the change log is out of sequence numbers")
        publishes.append([head, publish.at])
        cutoff = publish.at - publish.retention
        floor = max([floor, *(last for last, at in publishes if at < cutoff)])
        publishes = [p for p in publishes if p[1] >= cutoff]
    kept_removed = sorted((i for i, e in removed.items() if e[0] > floor), key=_key)
    for n, i in enumerate(kept_removed):
        extra.append((removed[i][0], log.REMOVED, n, removed[i][2]))
    if extra:  # the entries taken one by one: candidates, retractions, removals
        columns = np.asarray(extra, dtype=np.int64).T
        for out, column in zip((seqs, kinds, refs, ats), columns, strict=True):
            out.append(column)
    all_seq = np.concatenate(seqs).astype(np.int64)
    all_kind = np.concatenate(kinds).astype(np.int64)
    counts = np.bincount(all_kind, minlength=3)
    if int(counts[log.UPSERT]) != len(served) or int(counts[log.RETRACTED]) != len(ret_ids):
        raise BundleError(f"language {language}: the change log does not match the generation")
    records = _records(
        all_seq,
        all_kind,
        np.concatenate(refs).astype(np.int64),
        np.concatenate(ats).astype(np.int64),
    )
    return _files(records, [_key(i) for i in kept_removed], meta["lineage"], head, floor, publishes)


def _key(article_id: str) -> bytes:
    return article_id.encode("utf-8", "surrogatepass")


class _EtagsByGid:
    """The ETag of a gid of the generation built on."""

    def __init__(self, store: ObjectStore, segments: Sequence[Segment]) -> None:
        self.store = store
        self.segments = segments
        self.bases = np.cumsum([0] + [d.docs for d in segments]).tolist()
        self.readers: dict[int, SegmentReader] = {}

    def __call__(self, gid: int) -> bytes:
        n = bisect.bisect_right(self.bases, gid) - 1
        reader = self.readers.get(n)
        if reader is None:
            reader = self.readers[n] = SegmentReader(self.store, self.segments[n])
        local = gid - self.bases[n]
        return bytes(reader.etags[local * fmt.ETAG_BYTES : (local + 1) * fmt.ETAG_BYTES])
