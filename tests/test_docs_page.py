"""/docs in a real headless browser (Debian's chromium, driven by Playwright) against gunicorn.

The page renders every operation of /openapi.json, loads nothing from another host, and a
"Try it out" request run from the page reaches the service and shows its 200. The last
screenshot is kept as docs-page.png in the test's temporary directory.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.http_support import exchange
from tests.reliability.harness import Server, build_sample_bundle

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("docs")
    build_sample_bundle(tmp / "bundle")
    with Server(tmp / "server", tmp / "bundle") as srv:
        yield srv


def test_assets_are_served_by_the_service(server: Server) -> None:
    page = exchange(server.port, "GET", "/docs")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    for asset, kind in (
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
    ):
        reply = exchange(server.port, "GET", f"/docs/{asset}")
        assert reply.status == 200 and reply.headers["content-type"].startswith(kind), asset
        assert len(reply.body) > 10_000
        assert (
            exchange(
                server.port,
                "GET",
                f"/docs/{asset}",
                headers={"If-None-Match": reply.headers["etag"]},
            ).status
            == 304
        )
    for bad in ("../app/config.py", "package.json", "nope.js"):
        assert exchange(server.port, "GET", f"/docs/{bad}").status == 404, bad


def test_page_renders_every_operation_and_tries_one(server: Server, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "chromium is missing: .ci/run installs it with apt-get"
    document = json.loads(exchange(server.port, "GET", "/openapi.json").body)
    expected = sum(len(item) for item in document["paths"].values())
    hosts: set[str] = set()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.on("request", lambda request: hosts.add(urlsplit(request.url).netloc))
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{server.base_url}/docs", wait_until="networkidle")
            page.wait_for_selector(".opblock", timeout=20_000)
            blocks = page.locator(".opblock")
            assert blocks.count() == expected
            ids = set(page.locator(".opblock .opblock-summary-path").all_inner_texts())
            assert {path.replace("\u200b", "") for path in ids} == set(document["paths"])
            page.screenshot(path=str(tmp_path / "docs-overview.png"), full_page=False)

            # Try it out: GET /health from the page itself.
            health = page.locator("#operations-operations-health")
            health.locator(".opblock-summary").click()
            health.locator("button.try-out__btn").click()
            health.locator("button.execute").click()
            status = health.locator(".live-responses-table tbody .response-col_status").first
            status.wait_for(timeout=10_000)
            assert status.inner_text().strip() == "200"
            body = health.locator(".live-responses-table .microlight").first.inner_text()
            assert json.loads(body) == {"status": "ok"}
            health.scroll_into_view_if_needed()
            page.screenshot(path=str(tmp_path / "docs-page.png"), full_page=False)
            assert not errors, errors
        finally:
            browser.close()
    # Nothing came from another host: the service serves every asset itself.
    assert hosts == {urlsplit(server.base_url).netloc}, hosts
    print(f"screenshots: {tmp_path}")
