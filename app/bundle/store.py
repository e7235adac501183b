"""The bundle a worker serves, and live pick-up of newly published bundles.

A publish replaces `manifest.json` atomically, so a new manifest identity (device, inode,
mtime, size) means a complete new generation. Each worker process runs one background
thread that checks the identity every `check_interval` seconds and, when it changed, maps
and checks the new generation (only the objects the served one lacks) and then swaps one
reference. Requests never wait for that work: `current()` is an attribute read. A request
that already holds the old `Bundle` finishes on it; its mappings stay valid until the last
reference goes, even after the builder deletes the old objects.

The same thread also stats every mapped object each round, and never reads one to do so:
a file truncated, rewritten or removed behind the server's back (a disk fault, a `cp` over
the directory) would otherwise crash the worker with SIGBUS on its next read. What reads a
damaged object is swapped for an `Unavailable` (its requests answer 503), `/ready` answers
503 naming the objects, and the store loads them again once their files change (a repair
by install_bundle.py or bundle_sync.py) and pass their checks (docs/reliability.md).
"""

from __future__ import annotations

import logging
import os
import resource
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from app.bundle import format as fmt
from app.bundle.reader import Bundle, BundleError, Identity, find_damage

log = logging.getLogger("app.bundle")


class BundleStore:
    def __init__(self, directory: Path, check_interval: float = 1.0) -> None:
        self.directory = directory
        self.check_interval = check_interval
        raise_open_file_limit()
        # BundleError here (no bundle, a bad manifest) is a start-up failure. Damaged
        # objects are not: the worker starts, not ready, and heals when they are repaired.
        self._bundle = Bundle.load(directory, partial=True)
        # The stat of each damaged object's file when its load was last tried: the next try
        # waits until one of them changes (a repair), rather than re-reading every round.
        self._damage_seen: dict[str, tuple[int, ...] | None] = {}
        if self._bundle.damage:
            log.error("%s", self.damage_report())
        self._rejected: Identity | None = None
        # Why the newest bundle on disk was refused (None when the served one is the newest);
        # /ready reports it so a rollout can see an instance that kept its old bundle.
        self.rejection: str | None = None
        self.loaded_at = time.time()
        # Called (from the watcher thread) with the bundle served from now on, after every
        # swap: app.metrics keeps its gauges current without a cost per request.
        self.on_swap: list[Callable[[Bundle], None]] = []
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()
        # Threads do not survive fork: a worker forked from a preloading master (gunicorn,
        # also after `kill -HUP`) starts its own watcher on its first request, and gets a
        # fresh lock (one held by another master thread at fork time would never be released).
        this = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: _after_fork(this))
        log.info("serving bundle %s from %s", self._bundle.bundle_id, directory)

    def current(self) -> Bundle:
        if self._watcher is None:
            self._start_watcher()
        return self._bundle

    def damage_report(self) -> str | None:
        """What /ready and the log say while objects of the served bundle are damaged."""
        damage = self._bundle.damage
        if not damage:
            return None
        shown = "; ".join(
            problem.removeprefix(f"{self.directory}/") for problem in list(damage.values())[:5]
        )
        more = f" (and {len(damage) - 5} more)" if len(damage) > 5 else ""
        return (
            f"bundle {self._bundle.bundle_id}: {len(damage)} damaged object(s) in "
            f"{self.directory}, not served until repaired: {shown}{more}"
        )

    def _start_watcher(self) -> None:
        with self._lock:
            if self._watcher is not None:
                return
            # A forked worker looks at the disk once, right away: a new bundle, and damage
            # to the mappings it inherited, before it serves anything from them.
            self.refresh(locked=True)
            # The thread holds the store weakly: a store nobody uses any more (an app that was
            # dropped, as tests and tools do) is freed with its mappings, and its watcher ends.
            self._watcher = threading.Thread(
                target=_watch,
                args=(weakref.ref(self), self._stop, self.check_interval),
                name="bundle-watcher",
                daemon=True,
            )
            self._watcher.start()

    def close(self) -> None:
        self._stop.set()

    def refresh(self, *, locked: bool = False) -> bool:
        """Look for damage to the served bundle (and try to heal it), then load the bundle on
        disk if it is new and valid; True if the served bundle was swapped."""
        if not locked and not self._lock.acquire(blocking=False):
            return False  # another thread is already checking; serve what we have
        try:
            identity = _manifest_identity(self.directory)
            swapped = self._check_damage(identity) | self._load_new(identity)
            if swapped:
                for callback in self.on_swap:
                    callback(self._bundle)
            return swapped
        finally:
            if not locked:
                self._lock.release()

    def _load_new(self, identity: Identity | None) -> bool:
        if identity == self._bundle.identity:
            # The served generation is the newest on disk again (a refused one was taken
            # back): nothing is refused any more.
            self.rejection = self._rejected = None
            return False
        if identity is None or identity == self._rejected:
            return False
        started = time.monotonic()
        try:
            bundle = Bundle.load(self.directory, reuse=self._bundle)
        except BundleError as exc:
            log.error(
                "refusing new bundle in %s, still serving %s: %s",
                self.directory,
                self._bundle.bundle_id,
                exc,
            )
            self._rejected = identity
            self.rejection = str(exc)
            return False
        old, self._bundle = self._bundle, bundle
        self.rejection = None
        self._damage_seen = {}
        self.loaded_at = time.time()
        log.info(
            "switched bundle %s -> %s (loaded in %.3f s)",
            old.bundle_id,
            bundle.bundle_id,
            time.monotonic() - started,
        )
        if old.damage:
            log.warning("bundle %s serves whole again", bundle.bundle_id)
        return True

    def _check_damage(self, identity: Identity | None) -> bool:
        """Stop serving objects whose file changed (stat only), and load damaged ones again
        once their files changed since the last try."""
        served = self._bundle
        # Vanished or replaced files count only while the manifest on disk is the served
        # one: during a directory swap they are the new bundle's, and the reload decides.
        fresh = find_damage(served, moved=identity == served.identity)
        if fresh and identity == served.identity != _manifest_identity(self.directory):
            # The directory was swapped while its files were being looked at (the manifest
            # was the served one before, and is not now): not damage; the reload decides.
            fresh = {}
        if fresh:
            self._bundle = served.degraded(fresh)
            log.error("%s", self.damage_report())
        if not self._bundle.damage:
            return bool(fresh)
        seen = {name: _file_stat(self.directory, name) for name in self._bundle.damage}
        if seen == self._damage_seen:
            return bool(fresh)
        self._damage_seen = seen
        if identity != self._bundle.identity:
            # A new manifest was refused while files were still being written (a `cp` over
            # the directory): now that they changed, the next round tries it again.
            self._rejected = None
            return bool(fresh)
        try:
            bundle = Bundle.load(
                self.directory, reuse=self._bundle, partial=True, recheck=self._bundle.damage
            )
        except BundleError as exc:  # the manifest changed under us: the next round sees it
            log.warning("cannot reload damaged objects yet: %s", exc)
            return bool(fresh)
        if (
            bundle.identity != self._bundle.identity
            or bundle.damage.keys() == self._bundle.damage.keys()
        ):
            return bool(fresh)
        self._bundle = bundle
        self._damage_seen = {}
        if bundle.damage:
            log.error("%s", self.damage_report())
        else:
            log.warning("bundle %s repaired: serving every object again", bundle.bundle_id)
        return True


def raise_open_file_limit() -> int:
    """Raise this process's soft open-file limit to its hard limit, as Go's runtime does.

    Python's mmap keeps one descriptor per mapping, and a bundle maps tens of objects per
    segment per language: a few thousand descriptors for a large archive between merges,
    twice that while a new generation loads beside the old. A soft limit of 1024 (common
    under systemd and some container runtimes) is too low; the hard limit is the operator's
    real ceiling (docs/operations.md, "Open files"). Returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # keep the soft limit; a load that runs out says so (reader._os_problem)
    return soft


def _watch(ref: weakref.ref[BundleStore], stop: threading.Event, interval: float) -> None:
    while not stop.wait(interval):
        store = ref()
        if store is None:
            return
        try:
            store.refresh()
        except Exception:  # never let the watcher die: the next round retries
            log.exception("bundle check failed; still serving %s", store._bundle.bundle_id)
        del store  # hold no reference while waiting


def _after_fork(ref: weakref.ref[BundleStore]) -> None:
    store = ref()
    if store is not None:
        store._lock = threading.Lock()
        store._watcher = None
        store._stop = threading.Event()


def _file_stat(directory: Path, name: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(directory / fmt.OBJECTS / name)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _manifest_identity(directory: Path) -> Identity | None:
    try:
        st = os.stat(directory / fmt.MANIFEST)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
