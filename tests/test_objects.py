"""The content-addressed object store (app/bundle/objects.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.bundle.objects import ObjectStore


def test_an_object_stored_again_is_neither_synced_nor_kept_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A publish writes every generation file again and most are unchanged: only a new
    object is made durable (fsync, rename); an existing one's temporary file goes away."""
    store = ObjectStore(tmp_path)
    store.create()
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    first = store.put(b"the same bytes")
    assert len(synced) == 1
    with store.writer() as writer:
        writer.write(b"the same ")
        writer.write(b"bytes")
        again = writer.commit()
    assert again == first and len(synced) == 1
    other = store.put(b"other bytes")
    assert other[0] != first[0] and len(synced) == 2
    assert sorted(p.name for p in store.dir.iterdir()) == sorted([first[0], other[0]])
    assert store.path(first[0]).read_bytes() == b"the same bytes"
