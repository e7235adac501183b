"""The bundle a worker serves, and live pick-up of newly built bundles.

The builder replaces the bundle directory atomically, so a new `manifest.json` identity
(device, inode, mtime, size) means a complete new bundle. Each worker checks at most
once per `check_interval` seconds, from the request path, with one stat() call. A request
that already holds the old `Bundle` finishes on it: its mappings stay valid until the
last reference goes, even after the builder deletes the old directory.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from pathlib import Path

from app.bundle import format as fmt
from app.bundle.reader import Bundle, BundleError, Identity

log = logging.getLogger("app.bundle")


class BundleStore:
    def __init__(self, directory: Path, check_interval: float = 1.0) -> None:
        self.directory = directory
        self.check_interval = check_interval
        self._bundle = Bundle.load(directory)  # BundleError here is a start-up failure
        self._rejected: Identity | None = None
        self._next_check = time.monotonic() + check_interval
        self._lock = threading.Lock()
        # A worker forked from a preloading master (gunicorn, also after `kill -HUP`) checks
        # the disk on its first request instead of inheriting the master's schedule, and gets
        # a fresh lock (one held by another master thread at fork time would never be
        # released). Done at fork, so the request path pays nothing for it.
        this = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _after_fork(this))
        log.info("serving bundle %s from %s", self._bundle.bundle_id, directory)

    def current(self) -> Bundle:
        if time.monotonic() >= self._next_check:
            self.refresh()
        return self._bundle

    def refresh(self) -> bool:
        """Load the bundle on disk if it is new and valid; True if it was swapped in."""
        if not self._lock.acquire(blocking=False):
            return False  # another thread is already checking; serve what we have
        try:
            self._next_check = time.monotonic() + self.check_interval
            identity = _manifest_identity(self.directory)
            if identity is None or identity in (self._bundle.identity, self._rejected):
                return False
            try:
                bundle = Bundle.load(self.directory)
            except BundleError as exc:
                log.error(
                    "refusing new bundle in %s, still serving %s: %s",
                    self.directory,
                    self._bundle.bundle_id,
                    exc,
                )
                self._rejected = identity
                return False
            old, self._bundle = self._bundle, bundle
            log.info("switched bundle %s -> %s", old.bundle_id, bundle.bundle_id)
            return True
        finally:
            self._lock.release()


def _after_fork(ref: weakref.ref[BundleStore]) -> None:
    store = ref()
    if store is not None:
        store._lock = threading.Lock()
        store._next_check = 0.0


def _manifest_identity(directory: Path) -> Identity | None:
    try:
        st = os.stat(directory / fmt.MANIFEST)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
