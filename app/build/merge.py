"""Merging segments into one, in bounded memory (docs/publishing.md, "Merges").

The merged segment holds the live documents of its inputs in list order. Nothing is analysed
again: a posting's stored score depends on its own document only (app/search/layout.py), so
merging is renumbering documents and regrouping postings by term. Postings are processed in
batches of consecutive terms, each written out before the next is read, so memory follows the
batch size, not the archive; article bytes are streamed the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle.manifest import Segment
from app.bundle.objects import ObjectEntry, ObjectStore, ObjectWriter
from app.bundle.segment import SEPARATORS, SegmentReader
from app.compression import IDENTITY
from app.search import layout
from app.search.indexer import index_frame, ragged_arange, sorted_unique

# Bytes in flight per merge batch, estimated from what a batch holds at once: about 40 bytes
# a posting (key, order, scores) and 50 a position (the gather's int64 indexes, before and
# after the reorder). Counting postings alone (4 million a batch) let one 65,000-article
# Japanese merge peak at 1,106 MB; this budget: 568 MB, in the same time, the same bytes
# (bench/merge_memory.py; docs/benchmarks.md, "Build throughput against its floor").
BATCH_BYTES = 40_000_000
_POSTING_BYTES, _POSITION_BYTES = 40, 50
# Documents per batch when streaming article bytes.
_DOC_BATCH = 4096


@dataclass
class _Postings:
    """One input's view of a posting family, with its terms numbered in the merged space."""

    term_map: np.ndarray  # int64, ascending: merged term number of each input term
    ptr: np.ndarray  # uint32, input terms + 1
    docs: np.ndarray
    remap: np.ndarray  # int64: merged document of each input document, -1 if dropped
    vals: np.ndarray | None = None  # float32 scores (scored family)
    # Trigram family: occurrences per posting, where each term's occurrences start, and them.
    counts: np.ndarray | None = None
    base: np.ndarray | None = None
    pos: np.ndarray | None = None


def _merge_family(
    inputs: list[_Postings],
    n_terms: int,
    doc_dtype: str,
    release: Any,
    docs_out: ObjectWriter,
    vals_out: ObjectWriter | None,
    counts_out: ObjectWriter | None = None,
    pos_out: ObjectWriter | None = None,
    pos_dtype: str = "<u2",
    count_dtype: str = "<u1",
) -> tuple[np.ndarray, np.ndarray]:
    """Writes the merged postings (grouped by term, documents ascending); returns (documents,
    occurrences) per term."""
    df = np.zeros(n_terms, dtype=np.int64)
    occurrences = np.zeros(n_terms, dtype=np.int64)
    if n_terms == 0:
        return df, occurrences
    estimate = np.zeros(n_terms, dtype=np.int64)
    for p in inputs:
        cost = np.diff(p.ptr).astype(np.int64) * _POSTING_BYTES
        if p.base is not None:
            cost += np.diff(p.base[: p.term_map.size + 1]).astype(np.int64) * _POSITION_BYTES
        estimate += np.bincount(p.term_map, weights=cost, minlength=n_terms).astype(np.int64)
    cum = np.cumsum(estimate)
    cuts = np.searchsorted(cum, np.arange(BATCH_BYTES, int(cum[-1]), BATCH_BYTES))
    bounds = [0, *sorted(set((cuts + 1).tolist()) - {0, n_terms}), n_terms]
    for u0, u1 in itertools.pairwise(bounds):
        keys, vals, npos, pos = [], [], [], []
        for p in inputs:
            a, b = np.searchsorted(p.term_map, [u0, u1])
            if a == b:
                continue
            p0, p1 = int(p.ptr[a]), int(p.ptr[b])
            counts: np.ndarray = np.diff(p.ptr[a : b + 1].astype(np.int64))
            terms = np.repeat(p.term_map[a:b] - u0, counts)
            new = p.remap[p.docs[p0:p1]]
            keep = new >= 0
            keys.append(
                (terms[keep].astype(np.uint64) << np.uint64(32)) | new[keep].astype(np.uint64)
            )
            if p.vals is not None:
                vals.append(p.vals[p0:p1][keep])
            if p.counts is not None and p.base is not None and p.pos is not None:
                every = p.counts[p0:p1].astype(np.int64)
                first = (int(p.base[a]) + np.cumsum(every) - every)[keep]
                count = every[keep]
                npos.append(count)
                pos.append(p.pos[np.repeat(first, count) + ragged_arange(count)])
        if not keys:
            continue
        key = np.concatenate(keys)
        # Each input's run is already sorted: a stable sort merges the runs.
        order = np.argsort(key, kind="stable")
        key = key[order]
        df[u0:u1] = np.bincount((key >> np.uint64(32)).astype(np.int64), minlength=u1 - u0)
        docs_out.write((key & np.uint64(0xFFFFFFFF)).astype(doc_dtype).tobytes())
        if vals_out is not None:
            vals_out.write(np.concatenate(vals)[order].astype("<f4").tobytes())
        if counts_out is not None and pos_out is not None:
            counts = np.concatenate(npos)
            blocks = np.cumsum(counts) - counts
            all_pos = np.concatenate(pos)
            counts = counts[order]
            pos_out.write(
                all_pos[np.repeat(blocks[order], counts) + ragged_arange(counts)]
                .astype(pos_dtype)
                .tobytes()
            )
            counts_out.write(counts.astype(count_dtype).tobytes())
            occurrences[u0:u1] = np.bincount(
                (key >> np.uint64(32)).astype(np.int64), weights=counts, minlength=u1 - u0
            ).astype(np.int64)
        release()
    return df, occurrences


def _put(
    files: dict[str, str],
    entries: dict[str, ObjectEntry],
    name: str,
    w: ObjectWriter,
) -> None:
    obj, entry = w.commit()
    files[name] = obj
    entries[obj] = entry


def merge_segments(
    store: ObjectStore,
    language: str,
    inputs: Sequence[tuple[Segment, np.ndarray]],
) -> tuple[Segment, dict[str, ObjectEntry]]:
    """Merge (segment, sorted deleted local documents) pairs into one segment; returns it
    and its objects' entries."""
    readers = [SegmentReader(store, desc) for desc, _ in inputs]
    # -- the merged document order: live documents in list order -----------------------
    rows: list[tuple[int, bytes, int, int]] = []  # (-published, id, input, local)
    for s, (reader, (_, deleted)) in enumerate(zip(readers, inputs, strict=True)):
        live = np.ones(reader.docs, dtype=bool)
        live[deleted] = False
        published = reader.published().tolist()
        ids = reader.ids()
        rows.extend((-published[i], ids[i], s, i) for i in np.flatnonzero(live).tolist())
    if any(rows[i] > rows[i + 1] for i in range(len(rows) - 1)):
        rows.sort()
    n = len(rows)
    remaps = [np.full(r.docs, -1, dtype=np.int64) for r in readers]
    for new, (_, _, s, i) in enumerate(rows):
        remaps[s][i] = new
    files: dict[str, str] = {}
    entries: dict[str, ObjectEntry] = {}

    # -- per-document files ----------------------------------------------------------------
    def records(kind: str, encoding: str, name_bin: str, name_off: str) -> None:
        """Copies each live record (JSON, XML, or a compressed piece: never recompressed)."""
        sep = SEPARATORS[kind][encoding]
        pieces = [reader.pieces[kind, encoding] for reader in readers]
        with store.writer() as blob, store.writer() as offw:
            offsets = [0]
            for start in range(0, n, _DOC_BATCH):
                parts = []
                for _, _, s, i in rows[start : start + _DOC_BATCH]:
                    data, off, width = pieces[s]
                    parts.append(data[off[i] : off[i + 1] - width])
                for part in parts:
                    offsets.append(offsets[-1] + len(part) + len(sep))
                chunk = sep.join(parts)
                blob.write(chunk if start == 0 else sep + chunk if chunk else b"")
                del parts, chunk
                for reader in readers:
                    reader.release()
            offw.write(np.asarray(offsets, dtype="<u8").tobytes())
            _put(files, entries, name_bin, blob)
            _put(files, entries, name_off, offw)

    for kind, (name_bin, name_off, _) in fmt.RECORDS.items():
        records(kind, IDENTITY, name_bin, name_off)
    for (kind, encoding), (name_bin, name_off) in fmt.PIECES.items():
        records(kind, encoding, name_bin, name_off)

    def fixed(name: str, width: int) -> None:
        with store.writer() as w:
            for start in range(0, n, _DOC_BATCH):
                w.write(
                    b"".join(
                        readers[s].raw(name)[i * width : (i + 1) * width]
                        for _, _, s, i in rows[start : start + _DOC_BATCH]
                    )
                )
            _put(files, entries, name, w)

    fixed(fmt.ETAGS_BIN, fmt.ETAG_BYTES)
    fixed(fmt.PUBLISHED, 8)
    fixed(fmt.UPDATED, 8)
    fixed(fmt.LINES, fmt.LINE_HASH_BYTES)
    ids = [row[1] for row in rows]
    ids_off = np.concatenate(([0], np.cumsum([len(i) for i in ids], dtype=np.int64)))
    stories = [r.stories() for r in readers]
    story_list = [stories[s][i] for _, _, s, i in rows]
    stories_off = np.concatenate(([0], np.cumsum([len(i) for i in story_list], dtype=np.int64)))
    for name, data in (
        (fmt.SEG_IDS_BIN, b"".join(ids)),
        (fmt.SEG_IDS_OFF, ids_off.astype("<u8").tobytes()),
        (fmt.STORIES_BIN, b"".join(story_list)),
        (fmt.STORIES_OFF, stories_off.astype("<u8").tobytes()),
    ):
        obj, entry = store.put(data)
        files[name], entries[obj] = obj, entry
    categories = [r.categories() for r in readers]
    names = sorted({c for cats in categories for c in cats} if n else set())
    number = {name: i for i, name in enumerate(names)}
    for name, data in (
        (fmt.SEG_CATEGORIES, orjson.dumps(names)),
        (
            fmt.CATEGORY_OF,
            np.asarray([number[categories[s][i]] for _, _, s, i in rows], dtype="<u4").tobytes(),
        ),
    ):
        obj, entry = store.put(data)
        files[name], entries[obj] = obj, entry

    corrections = sorted(
        [int(remaps[s][doc]), title, notes]
        for s, reader in enumerate(readers)
        for doc, title, notes in reader.corrections()
        if remaps[s][doc] >= 0
    )
    obj, entry = store.put(orjson.dumps(corrections))
    files[fmt.SEG_CORRECTIONS], entries[obj] = obj, entry

    _merge_index(store, language, readers, remaps, n, files, entries)
    return Segment(n, files), entries


def _merge_index(
    store: ObjectStore,
    language: str,
    readers: list[SegmentReader],
    remaps: list[np.ndarray],
    n: int,
    files: dict[str, str],
    entries: dict[str, ObjectEntry],
) -> None:
    metas = [r.search_meta() for r in readers]
    # Pair postings are copied as they are, so every input must number the same pair words
    # (app/search/pair_words.py: a language keeps its list from one --full build to the next).
    pair_list = metas[0].pair_words
    if any(m.pair_words != pair_list for m in metas):
        raise ValueError(f"{language}: segments with different pair words cannot be merged")

    def release() -> None:
        for reader in readers:
            reader.release()

    words = []
    for r, meta in zip(readers, metas, strict=True):
        blob, off = r.raw(layout.WORDS), r.array(layout.WORDOFF, "<u4").tolist()
        words.append([blob[off[i] : off[i + 1]].tobytes() for i in range(meta.words)])
    out_words = sorted(set().union(*words))
    word_number = {w: i for i, w in enumerate(out_words)}
    unis = [r.array(layout.UNIGRAMS, "<u4") for r in readers]
    bis = [r.array(layout.BIGRAMS, "<u8") for r in readers]
    tris = [r.array(layout.TRIGRAMS, "<u8") for r in readers]
    out_uni = sorted_unique(np.concatenate([np.zeros(0, "<u4"), *unis]))
    out_bi = sorted_unique(np.concatenate([np.zeros(0, "<u8"), *bis]))
    out_tri = sorted_unique(np.concatenate([np.zeros(0, "<u8"), *tris]))
    nw, nu, nb = len(out_words), out_uni.size, out_bi.size
    doc_type = "H" if n <= layout.SHORT_DOC_LIMIT else "I"
    doc_dtype = "<u2" if doc_type == "H" else "<u4"
    pos_type = "I" if any(m.pos_type == "I" for m in metas) else "H"
    count_type = max((m.count_type for m in metas), key="BHI".index, default="B")
    wcount_type = max((m.wcount_type for m in metas), key="BHI".index, default="B")

    # Word postings (with positions) and CJK postings are merged apart, words first, into
    # the same documents and scores files: only the words carry positions.
    scored_words, scored_cjk, trigram = [], [], []
    for r, meta, w, u, b, t, remap in zip(
        readers, metas, words, unis, bis, tris, remaps, strict=True
    ):
        in_docs = "<u2" if meta.doc_type == "H" else "<u4"
        ptr = r.array(layout.PTR, "<u4")
        docs = r.array(layout.DOCS, in_docs)
        vals = r.array(layout.SCORES, "<f4")
        scored_words.append(
            _Postings(
                np.fromiter((word_number[x] for x in w), dtype=np.int64, count=len(w)),
                ptr[: len(w) + 1],
                docs,
                remap,
                vals=vals,
                counts=r.array(layout.WORDCOUNT, layout.NUMPY_TYPES[meta.wcount_type]),
                base=r.array(layout.WORDPBASE, "<u4"),
                pos=r.array(layout.WORDPOS, "<u1"),  # varint bytes: copied, never decoded
            )
        )
        cjk_map = np.concatenate(
            (
                np.searchsorted(out_uni, u).astype(np.int64),
                nu + np.searchsorted(out_bi, b).astype(np.int64),
            )
        )
        scored_cjk.append(_Postings(cjk_map, ptr[len(w) :], docs, remap, vals=vals))
        trigram.append(
            _Postings(
                np.searchsorted(out_tri, t).astype(np.int64),
                r.array(layout.TRIPTR, "<u4"),
                r.array(layout.TRIDOCS, in_docs),
                remap,
                counts=r.array(layout.TRICOUNT, layout.NUMPY_TYPES[meta.count_type]),
                base=r.array(layout.TRIPBASE, "<u4"),
                pos=r.array(layout.TRIPOS, "<u2" if meta.pos_type == "H" else "<u4"),
            )
        )
    with (
        store.writer() as docs_w,
        store.writer() as scores_w,
        store.writer() as wcounts_w,
        store.writer() as wpos_w,
    ):
        word_df, word_occurrences = _merge_family(
            scored_words,
            nw,
            doc_dtype,
            release,
            docs_w,
            scores_w,
            wcounts_w,
            wpos_w,
            "<u1",
            layout.NUMPY_TYPES[wcount_type],
        )
        cjk_df, _ = _merge_family(scored_cjk, nu + nb, doc_dtype, release, docs_w, scores_w)
        df = np.concatenate((word_df, cjk_df))
        word_positions = int(word_occurrences.sum())
        _put(files, entries, layout.DOCS, docs_w)
        _put(files, entries, layout.SCORES, scores_w)
        _put(files, entries, layout.WORDCOUNT, wcounts_w)
        _put(files, entries, layout.WORDPOS, wpos_w)
    with store.writer() as tdocs_w, store.writer() as counts_w, store.writer() as pos_w:
        tri_df, occurrences = _merge_family(
            trigram,
            out_tri.size,
            doc_dtype,
            release,
            tdocs_w,
            None,
            counts_w,
            pos_w,
            "<u2" if pos_type == "H" else "<u4",
            layout.NUMPY_TYPES[count_type],
        )
        positions = int(occurrences.sum())
        _put(files, entries, layout.TRIDOCS, tdocs_w)
        _put(files, entries, layout.TRICOUNT, counts_w)
        _put(files, entries, layout.TRIPOS, pos_w)
    tripbase = np.concatenate(([0], np.cumsum(occurrences)))
    ptr = np.concatenate(([0], np.cumsum(df)))
    triptr = np.concatenate(([0], np.cumsum(tri_df)))
    wordpbase = np.concatenate(([0], np.cumsum(word_occurrences)))
    frame = index_frame(
        language,
        n,
        pair_list,
        out_words,
        (out_uni, out_bi, out_tri),
        (ptr, triptr, tripbase, wordpbase),
        positions,
        word_positions,
        (pos_type, count_type, wcount_type),
    )
    for name, data in frame.items():
        obj, entry = store.put(data)
        files[name], entries[obj] = obj, entry
