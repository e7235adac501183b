"""Merging segments into one, in bounded memory (docs/publishing.md, "Merges").

The merged segment holds the live documents of its inputs in list order: their per-document
files are streamed a batch of documents at a time, and their search indexes are merged by
app/search/index_merge.py, so memory follows the batches, not the archive.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import orjson

from app.bundle import format as fmt
from app.bundle import heads
from app.bundle.manifest import Segment
from app.bundle.objects import ObjectEntry, ObjectStore
from app.bundle.segment import SEPARATORS, SegmentReader
from app.compression import IDENTITY
from app.search.index_merge import merge_index

# Documents per batch when streaming article bytes.
_DOC_BATCH = 4096


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
            blob.commit_into(files, entries, name_bin)
            offw.commit_into(files, entries, name_off)

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
            w.commit_into(files, entries, name)

    fixed(fmt.ETAGS_BIN, fmt.ETAG_BYTES)
    fixed(fmt.PUBLISHED, 8)
    fixed(fmt.UPDATED, 8)
    fixed(fmt.LINES, fmt.LINE_HASH_BYTES)
    fixed(fmt.HEADS, heads.width(language))
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

    index_files, index_entries = merge_index(store, language, readers, remaps, n)
    files.update(index_files)
    entries.update(index_entries)
    return Segment(n, files), entries
