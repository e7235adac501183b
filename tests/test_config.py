"""Settings from the environment (docs/api.md §6, configuration table)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT, ConfigError, Settings


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.bundle_dir == PROJECT_ROOT / "data" / "bundles"
    assert settings.comments_dsn.startswith("sqlite:///")
    assert Path(settings.comments_dsn.removeprefix("sqlite:///")).parent == PROJECT_ROOT / "data"
    assert settings.admin_token is None
    assert settings.cache_max_age == 60
    assert settings.cache_stale_while_revalidate == 60
    assert settings.cache_stale_if_error == 86400
    assert (settings.comment_rate_count, settings.comment_rate_seconds) == (10, 60)
    assert settings.trusted_proxies == ()
    assert settings.trust_unix_peers is False
    assert settings.bundle_check_interval > 0


def test_every_variable_read() -> None:
    settings = Settings.from_env(
        {
            "NEWS_BUNDLE_DIR": "/srv/bundles",
            "NEWS_COMMENTS_DSN": "postgresql://u@db/news",
            "NEWS_ADMIN_TOKEN": "s3cret",
            "NEWS_CACHE_MAX_AGE": " 300 ",
            "NEWS_COMMENT_RATE_LIMIT": "5/30",
            "NEWS_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1 ,unix,::1",
            "NEWS_BUNDLE_CHECK_INTERVAL": "0.25",
            "NEWS_PG_POOL_SIZE": "2",
            "NEWS_CACHE_STALE_WHILE_REVALIDATE": "15",
            "NEWS_CACHE_STALE_IF_ERROR": "600",
        }
    )
    assert settings.cache_stale_while_revalidate == 15
    assert settings.cache_stale_if_error == 600
    assert settings.bundle_dir == Path("/srv/bundles")
    assert settings.comments_dsn == "postgresql://u@db/news"
    assert settings.admin_token == "s3cret"
    assert settings.cache_max_age == 300
    assert (settings.comment_rate_count, settings.comment_rate_seconds) == (5, 30)
    assert settings.trusted_proxies == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("::1/128"),
    )
    assert settings.trust_unix_peers is True
    assert settings.bundle_check_interval == 0.25
    assert settings.pg_pool_size == 2


def test_empty_values_fall_back_to_defaults() -> None:
    empty = {
        name: ""
        for name in (
            "NEWS_BUNDLE_DIR",
            "NEWS_COMMENTS_DSN",
            "NEWS_ADMIN_TOKEN",
            "NEWS_CACHE_MAX_AGE",
            "NEWS_COMMENT_RATE_LIMIT",
            "NEWS_TRUSTED_PROXIES",
        )
    }
    assert Settings.from_env(empty) == Settings.from_env({})


def test_zero_max_age_allowed() -> None:
    assert Settings.from_env({"NEWS_CACHE_MAX_AGE": "0"}).cache_max_age == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NEWS_CACHE_MAX_AGE", "-1"),
        ("NEWS_CACHE_MAX_AGE", "1.5"),
        ("NEWS_CACHE_MAX_AGE", "sixty"),
        ("NEWS_COMMENT_RATE_LIMIT", "10"),
        ("NEWS_COMMENT_RATE_LIMIT", "0/60"),
        ("NEWS_COMMENT_RATE_LIMIT", "10/0"),
        ("NEWS_COMMENT_RATE_LIMIT", "ten/60"),
        ("NEWS_CACHE_STALE_WHILE_REVALIDATE", "-1"),
        ("NEWS_CACHE_STALE_WHILE_REVALIDATE", "soon"),
        ("NEWS_CACHE_STALE_IF_ERROR", "1.5"),
        ("NEWS_TRUSTED_PROXIES", "10.0.0.0/8,not-an-ip"),
    ],
)
def test_invalid_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


def test_cache_max_age_reaches_responses(tmp_path: Path) -> None:
    from falcon.testing import TestClient

    from app.builder.builder import build
    from app.wsgi import create_app
    from tests.helpers import good, write_jsonl

    write_jsonl(tmp_path / "src" / "a.jsonl", [good("x")])
    build(tmp_path / "src", tmp_path / "b")
    env = {
        "NEWS_BUNDLE_DIR": str(tmp_path / "b"),
        "NEWS_COMMENTS_DSN": f"sqlite:///{tmp_path}/c.sqlite3",
        "NEWS_CACHE_MAX_AGE": "9",
        "NEWS_CACHE_STALE_WHILE_REVALIDATE": "30",
        "NEWS_CACHE_STALE_IF_ERROR": "0",
    }
    client = TestClient(create_app(Settings.from_env(env)))
    for path in (
        "/api/v1/en/articles",
        "/api/v1/en/articles/x",
        "/api/v1/en/categories",
        "/api/v1/en/articles/latest",
    ):
        assert (
            client.simulate_get(path).headers["cache-control"]
            == "public, max-age=9, stale-while-revalidate=30, stale-if-error=0"
        )


@pytest.mark.parametrize("raw", ["0", "-1", "four"])
def test_pool_size_must_be_a_positive_integer(raw: str) -> None:
    with pytest.raises(ConfigError, match="NEWS_PG_POOL_SIZE"):
        Settings.from_env({"NEWS_PG_POOL_SIZE": raw})


def test_the_response_cache_budget_and_the_deprecated_whole_page_budget(
    tmp_path: Path, bundle: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    """One cache of finished responses (docs/operations.md): NEWS_RESPONSE_CACHE_BYTES is its
    budget; NEWS_WHOLE_PAGE_CACHE_BYTES, whose cache was merged into it, still counts (added
    to it) and is reported as deprecated."""
    from app.response_cache import App
    from app.wsgi import create_app

    assert Settings.from_env({}).answer_cache_bytes == 128 << 20
    assert Settings.from_env({"NEWS_RESPONSE_CACHE_BYTES": "0"}).answer_cache_bytes == 0
    both = Settings.from_env(
        {"NEWS_RESPONSE_CACHE_BYTES": "1000", "NEWS_WHOLE_PAGE_CACHE_BYTES": "24"}
    )
    assert both.answer_cache_bytes == 1024
    with pytest.raises(ConfigError, match="NEWS_WHOLE_PAGE_CACHE_BYTES"):
        Settings.from_env({"NEWS_WHOLE_PAGE_CACHE_BYTES": "-1"})
    served, dsn = bundle[0], f"sqlite:///{tmp_path}/c.sqlite3"
    with caplog.at_level("WARNING", logger="app"):
        app = create_app(Settings(bundle_dir=served, comments_dsn=dsn, whole_page_cache_bytes=24))
    assert "NEWS_WHOLE_PAGE_CACHE_BYTES is deprecated" in caplog.text
    assert isinstance(app, App) and app._response_cache is not None
    caplog.clear()
    off = create_app(Settings(bundle_dir=served, comments_dsn=dsn, response_cache_bytes=0))
    assert isinstance(off, App) and off._response_cache is None and not caplog.text
