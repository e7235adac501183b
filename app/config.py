"""Service configuration, read once from the environment (docs/api.md §6)."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


MODES = ("post", "links", "first", "pre")
# What an author whose comment is held or removed is told about contesting it (DSA art. 17).
DEFAULT_REDRESS = (
    "You can ask the newsroom to review this decision by replying to it; you may also turn"
    " to an out-of-court dispute settlement body or a court."
)


@dataclass(frozen=True)
class Settings:
    bundle_dir: Path = PROJECT_ROOT / "data" / "bundles"
    comments_dsn: str = f"sqlite:///{PROJECT_ROOT / 'data' / 'comments.sqlite3'}"
    admin_token: str | None = None
    cache_max_age: int = 60
    # How long a cache may serve a stale answer while it revalidates, or when we fail.
    cache_stale_while_revalidate: int = 60
    cache_stale_if_error: int = 86400
    comment_rate_count: int = 10
    comment_rate_seconds: int = 60
    trusted_proxies: tuple[IPNetwork, ...] = field(default_factory=tuple)
    # `unix` in NEWS_TRUSTED_PROXIES: a peer on a unix socket is the proxy. Only what can
    # open the socket file can be that peer (make cluster: nginx alone, cluster/runtime.py).
    trust_unix_peers: bool = False
    # How often (seconds) a worker looks for a newly built bundle on disk.
    bundle_check_interval: float = 1.0
    # Most PostgreSQL connections one worker holds (docs/operations.md has the budget).
    pg_pool_size: int = 4
    # Bytes of finished responses one worker keeps to answer repeats (app.response_cache),
    # whole pages included; 0: off.
    response_cache_bytes: int = 128 << 20
    # Deprecated (NEWS_WHOLE_PAGE_CACHE_BYTES, the budget of a cache now merged into the
    # response cache): when set, added to its budget, and app.wsgi logs a warning.
    whole_page_cache_bytes: int | None = None

    @property
    def answer_cache_bytes(self) -> int:
        """The response cache's budget: NEWS_RESPONSE_CACHE_BYTES, plus the deprecated
        NEWS_WHOLE_PAGE_CACHE_BYTES when it is set (the memory it was sized for)."""
        return self.response_cache_bytes + (self.whole_page_cache_bytes or 0)

    # Moderation (docs/moderation.md). The defaults keep comments as they were: published at
    # once, never closed, no term lists, the admin token the only moderator.
    moderation_mode: str = "post"
    moderation_terms: Path | None = None
    moderators_file: Path | None = None
    comments_close_after_days: int = 0
    comment_edit_seconds: int = 300
    reports_to_withhold: int = 3
    report_rate_count: int = 20
    report_rate_seconds: int = 60
    moderation_redress: str = DEFAULT_REDRESS
    # The key author tokens are derived from; unset: one generated and kept in the database.
    author_secret: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        defaults = cls()
        count, seconds = _parse_rate(
            "NEWS_COMMENT_RATE_LIMIT",
            env.get("NEWS_COMMENT_RATE_LIMIT", "").strip()
            or f"{defaults.comment_rate_count}/{defaults.comment_rate_seconds}",
        )
        report_count, report_seconds = _parse_rate(
            "NEWS_REPORT_RATE_LIMIT",
            env.get("NEWS_REPORT_RATE_LIMIT", "").strip()
            or f"{defaults.report_rate_count}/{defaults.report_rate_seconds}",
        )
        mode = (env.get("NEWS_MODERATION_MODE") or defaults.moderation_mode).strip()
        if mode not in MODES:
            raise ConfigError(
                f"NEWS_MODERATION_MODE must be one of {', '.join(MODES)}, got {mode!r}"
            )
        return cls(
            bundle_dir=Path(env.get("NEWS_BUNDLE_DIR") or defaults.bundle_dir),
            comments_dsn=env.get("NEWS_COMMENTS_DSN") or defaults.comments_dsn,
            admin_token=env.get("NEWS_ADMIN_TOKEN") or None,
            cache_max_age=_parse_int(
                "NEWS_CACHE_MAX_AGE", env.get("NEWS_CACHE_MAX_AGE"), defaults.cache_max_age
            ),
            cache_stale_while_revalidate=_parse_int(
                "NEWS_CACHE_STALE_WHILE_REVALIDATE",
                env.get("NEWS_CACHE_STALE_WHILE_REVALIDATE"),
                defaults.cache_stale_while_revalidate,
            ),
            cache_stale_if_error=_parse_int(
                "NEWS_CACHE_STALE_IF_ERROR",
                env.get("NEWS_CACHE_STALE_IF_ERROR"),
                defaults.cache_stale_if_error,
            ),
            comment_rate_count=count,
            comment_rate_seconds=seconds,
            trusted_proxies=_parse_networks(env.get("NEWS_TRUSTED_PROXIES", "")),
            trust_unix_peers=UNIX_PEERS in _items(env.get("NEWS_TRUSTED_PROXIES", "")),
            bundle_check_interval=_parse_interval(env.get("NEWS_BUNDLE_CHECK_INTERVAL")),
            pg_pool_size=_parse_pool_size(env.get("NEWS_PG_POOL_SIZE"), defaults.pg_pool_size),
            response_cache_bytes=_parse_int(
                "NEWS_RESPONSE_CACHE_BYTES",
                env.get("NEWS_RESPONSE_CACHE_BYTES"),
                defaults.response_cache_bytes,
            ),
            whole_page_cache_bytes=_parse_optional_int(
                "NEWS_WHOLE_PAGE_CACHE_BYTES", env.get("NEWS_WHOLE_PAGE_CACHE_BYTES")
            ),
            moderation_mode=mode,
            moderation_terms=_directory("NEWS_MODERATION_TERMS", env.get("NEWS_MODERATION_TERMS")),
            moderators_file=_file("NEWS_MODERATORS", env.get("NEWS_MODERATORS")),
            comments_close_after_days=_parse_int(
                "NEWS_COMMENTS_CLOSE_AFTER_DAYS",
                env.get("NEWS_COMMENTS_CLOSE_AFTER_DAYS"),
                defaults.comments_close_after_days,
            ),
            comment_edit_seconds=_parse_int(
                "NEWS_COMMENT_EDIT_SECONDS",
                env.get("NEWS_COMMENT_EDIT_SECONDS"),
                defaults.comment_edit_seconds,
            ),
            reports_to_withhold=max(
                1,
                _parse_int(
                    "NEWS_REPORTS_TO_WITHHOLD",
                    env.get("NEWS_REPORTS_TO_WITHHOLD"),
                    defaults.reports_to_withhold,
                ),
            ),
            report_rate_count=report_count,
            report_rate_seconds=report_seconds,
            moderation_redress=(env.get("NEWS_MODERATION_REDRESS") or "").strip()
            or defaults.moderation_redress,
            author_secret=env.get("NEWS_AUTHOR_SECRET") or None,
        )


def _parse_int(name: str, raw: str | None, default: int) -> int:
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a non-negative integer, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must be a non-negative integer, got {raw!r}")
    return value


def _parse_optional_int(name: str, raw: str | None) -> int | None:
    return None if raw is None or raw.strip() == "" else _parse_int(name, raw, 0)


def _parse_pool_size(raw: str | None, default: int) -> int:
    value = _parse_int("NEWS_PG_POOL_SIZE", raw, default)
    if value < 1:
        raise ConfigError(f"NEWS_PG_POOL_SIZE must be at least 1, got {raw!r}")
    return value


def _parse_interval(raw: str | None) -> float:
    if raw is None or raw.strip() == "":
        return Settings.bundle_check_interval
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConfigError(f"NEWS_BUNDLE_CHECK_INTERVAL must be seconds >= 0, got {raw!r}")
    return value


def _parse_rate(name: str, raw: str) -> tuple[int, int]:
    count, sep, seconds = raw.partition("/")
    try:
        result = int(count), int(seconds)
    except ValueError:
        result = (0, 0)
    if not sep or result[0] < 1 or result[1] < 1:
        raise ConfigError(f"{name} must look like COUNT/SECONDS, got {raw!r}")
    return result


UNIX_PEERS = "unix"


def _items(raw: str) -> list[str]:
    return [item for item in (part.strip() for part in raw.split(",")) if item]


def _parse_networks(raw: str) -> tuple[IPNetwork, ...]:
    networks = []
    for item in _items(raw):
        if item == UNIX_PEERS:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ConfigError(f"NEWS_TRUSTED_PROXIES has an invalid address {item!r}") from None
    return tuple(networks)


def _directory(name: str, raw: str | None) -> Path | None:
    """A directory that may not exist yet (files appear in it later); None when unset."""
    if raw is None or not raw.strip():
        return None
    path = Path(raw.strip())
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name} must name a directory, got {raw!r}")
    return path


def _file(name: str, raw: str | None) -> Path | None:
    if raw is None or not raw.strip():
        return None
    path = Path(raw.strip())
    if not path.is_file():
        raise ConfigError(f"{name} must name a readable file, got {raw!r}")
    return path
