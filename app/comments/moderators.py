"""Who may moderate which languages (docs/moderation.md, "Moderators").

`NEWS_MODERATORS` names a file of lines `<name> <languages> <sha256 hex of the token>`
(`languages`: comma-separated codes or `*`; `#` starts a comment line). Only digests are
kept, and a bearer token is hashed and compared with every digest in constant time. The
file is read again when it changes (looked at most once a second), so a moderator is added
or removed without a restart; a file that cannot be read keeps the previous moderators.
`NEWS_ADMIN_TOKEN` is always the moderator `admin` of every language.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.config import ConfigError
from app.languages import LANGUAGE_SET, LANGUAGES

log = logging.getLogger("app.comments")

ADMIN = "admin"
_MAX_FILE_BYTES = 1 << 20
_EMPTY_DIGEST = hashlib.sha256(b"").digest()


@dataclass(frozen=True)
class Moderator:
    name: str
    languages: frozenset[str]

    def covers(self, language: str) -> bool:
        return language in self.languages


@dataclass(frozen=True)
class _Entry:
    moderator: Moderator
    digest: bytes


def parse(text: str, where: str) -> list[_Entry]:
    """The moderators of a file's text; a bad line is a ConfigError naming it."""
    entries: list[_Entry] = []
    names: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ConfigError(f"{where}:{number}: expected '<name> <languages> <sha256 hex>'")
        name, languages, digest = fields
        if name in names or name == ADMIN:
            raise ConfigError(f"{where}:{number}: moderator {name!r} named twice (or 'admin')")
        if languages == "*":
            scope = frozenset(LANGUAGES)
        else:
            scope = frozenset(languages.split(","))
            unknown = sorted(scope - LANGUAGE_SET)
            if unknown or not scope:
                raise ConfigError(f"{where}:{number}: unknown languages {unknown}")
        try:
            raw = bytes.fromhex(digest)
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise ConfigError(f"{where}:{number}: the token's digest must be 64 hex digits")
        if raw == _EMPTY_DIGEST:
            # What `printf %s "$TOKEN" | sha256sum` prints when TOKEN is unset: it would make
            # an empty bearer value (or another scheme) a moderator.
            raise ConfigError(f"{where}:{number}: that is the digest of an empty token")
        names.add(name)
        entries.append(_Entry(Moderator(name, scope), raw))
    return entries


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Moderators:
    def __init__(
        self, path: Path | None, admin_token: str | None, check_seconds: float = 1.0
    ) -> None:
        self._path = path
        self._check_seconds = check_seconds
        self._admin = (
            None
            if not admin_token
            else _Entry(Moderator(ADMIN, frozenset(LANGUAGES)), digest(admin_token))
        )
        self._entries: list[_Entry] = []
        self._seen: tuple[int, int] | None = None
        self._next_check = 0.0
        self._lock = threading.Lock()
        if path is not None:
            # At start a bad file stops the service (ConfigError) rather than leaving it
            # without moderators; later changes that do not parse are logged and ignored.
            self._entries = parse(self._read(path), str(path))
            self._seen = self._stamp(path)
            self._next_check = time.monotonic() + check_seconds

    @property
    def configured(self) -> bool:
        return self._admin is not None or self._path is not None

    def identify(self, token: str) -> Moderator | None:
        """The moderator whose token this is, or None. Every digest is compared, in constant
        time, so the time taken tells nothing of which one (if any) matched."""
        if not token:
            return None
        self._refresh()
        given = digest(token)
        found = None
        entries = self._entries if self._admin is None else [self._admin, *self._entries]
        for entry in entries:
            if hmac.compare_digest(given, entry.digest):
                found = entry.moderator
        return found

    def _refresh(self) -> None:
        path = self._path
        if path is None or time.monotonic() < self._next_check:
            return
        with self._lock:
            if time.monotonic() < self._next_check:
                return
            self._next_check = time.monotonic() + self._check_seconds
            try:
                stamp = self._stamp(path)
                if stamp == self._seen:
                    return
                self._entries = parse(self._read(path), str(path))
                self._seen = stamp
                log.info("moderators: read %d from %s", len(self._entries), path)
            except (OSError, ConfigError, UnicodeDecodeError) as error:
                log.error("moderators: keeping the previous list: %s", error)

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int]:
        status = os.stat(path)
        return status.st_mtime_ns, status.st_size

    @staticmethod
    def _read(path: Path) -> str:
        try:
            with open(path, "rb") as file:
                data = file.read(_MAX_FILE_BYTES + 1)
        except OSError as error:
            raise ConfigError(f"NEWS_MODERATORS: cannot read {path}: {error}") from None
        if len(data) > _MAX_FILE_BYTES:
            raise ConfigError(f"NEWS_MODERATORS: {path} is over {_MAX_FILE_BYTES} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"NEWS_MODERATORS: {path} is not UTF-8") from None
