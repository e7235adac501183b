"""/moderation in a real headless browser (Debian's chromium, driven by Playwright) against
gunicorn, through the section 12 moderation API it works with.

The queues are filled through the public API as readers fill them (comments on an article
set to `pre`, reports from several clients behind a trusted proxy, a notice); a moderator
then works them in the page, and the public API is asked afterwards what changed. Every
text the page shows comes from the API: the hostile-content test sends markup, script,
`javascript:` URLs, direction overrides, zero-width characters, a 5,000-character word and
many scripts through every field a moderator sees, and checks that nothing runs and that
nothing leaves its box, at 360 px and at desktop width.

Screenshots land in the test's temporary directory; with MODERATION_SCREENSHOTS=<dir>
(scripts/dev/moderation_screenshots.sh) the two of docs/moderation.md are written there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from tests.http_support import exchange
from tests.reliability.harness import ADMIN_TOKEN, Server, build_sample_bundle

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EN_TOKEN = "mod-en-4f1c0a9d2b7e"  # ana: en
FR_TOKEN = "mod-fr-93b2d6e8c5a1"  # bea: fr
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
    " img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 360, "height": 780}

# Through every field a moderator reads: each would run, or escape, if it were markup.
HOSTILE = (
    '<img src=x onerror="window.__pwned=1;alert(1)">',
    "</script><script>window.__pwned=2;alert(2)</script>",
    'javascript:window.__pwned=3 <a href="javascript:window.__pwned=3">click</a>',
    "abc\u202eexe.txt\u202d and \u2067isolate never closed",
    "zero\u200bwidth\u200c\u200djoin\ufeff\u2060word",
    "W" * 5000,
    "한국어 日本語の文 简体中文 繁體中文 العربية עברית हिन्दी ไทย Ελληνικά Русский 🙂👩‍👩‍👧 Z̷̢̛a̸̡l̵g̶o̷",
    '"><svg onload=window.__pwned=4>{{constructor.constructor("window.__pwned=5")()}}',
)


def _sha256(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("moderation")
    build_sample_bundle(tmp / "bundle")
    moderators = tmp / "moderators"
    moderators.write_text(f"ana en {_sha256(EN_TOKEN)}\nbea fr {_sha256(FR_TOKEN)}\n")
    env = {
        "NEWS_MODERATORS": str(moderators),
        "NEWS_TRUSTED_PROXIES": "127.0.0.1",
        "NEWS_REPORT_RATE_LIMIT": "1000000/60",
        "NEWS_MODERATION_REDRESS": "Ask for a review at review@example.org",
    }
    with Server(tmp / "server", tmp / "bundle", workers=1, env=env) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "chromium is missing: .ci/run installs it with apt-get"
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


# -- the API, as readers and as the test's oracle ------------------------------------------


def call(
    server: Server,
    method: str,
    path: str,
    *,
    token: str | None = None,
    json: Any = None,
    client: str | None = None,
) -> tuple[int, Any]:
    import orjson

    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if client:
        headers["X-Forwarded-For"] = client
    reply = server.request(method, path, headers=headers, json=json)
    body = orjson.loads(reply.body) if reply.body else None
    return reply.status, body


def article_path(language: str, article_id: str) -> str:
    return f"/api/v1/{language}/articles/{quote(article_id, safe='')}"


def post_comment(
    server: Server,
    language: str,
    article_id: str,
    content: str,
    author: str = "reader",
    client: str = "198.51.100.1",
) -> dict[str, Any]:
    status, body = call(
        server,
        "POST",
        article_path(language, article_id) + "/comments",
        json={"author": author, "content": content},
        client=client,
    )
    assert status == 201, body
    return body


def set_mode(server: Server, language: str, article_id: str, mode: str | None) -> None:
    status, body = call(
        server,
        "PUT",
        article_path(language, article_id) + "/comments/settings",
        token=ADMIN_TOKEN,
        json={"mode": mode, "closed": False},
    )
    assert status == 200, body


def report(server: Server, comment: dict[str, Any], reason: str, client: str) -> None:
    status, body = call(
        server,
        "POST",
        article_path(comment["language"], comment["article_id"])
        + f"/comments/{quote(comment['id'], safe='')}/reports",
        json={"reason": reason, "text": None},
        client=client,
    )
    assert status == 202, body


def notice(server: Server, comment: dict[str, Any], explanation: str, **extra: Any) -> Any:
    status, body = call(
        server,
        "POST",
        article_path(comment["language"], comment["article_id"])
        + f"/comments/{quote(comment['id'], safe='')}/notices",
        # Fields left out rather than null: `"notifier_email": null` answers 500 (the
        # NoticeCreate model applies max_length to the null; reported to the lead).
        json={"explanation": explanation, "good_faith": True, **extra},
        client="203.0.113.9",
    )
    assert status == 201, body
    return body


def sample_ids(server: Server, language: str) -> list[str]:
    status, body = call(server, "GET", f"/api/v1/{language}/articles?page_size=50&order=oldest")
    assert status == 200
    return [item["id"] for item in body["items"]]


def reader_ids(server: Server, language: str, article_id: str) -> dict[str, dict[str, Any]]:
    status, body = call(server, "GET", article_path(language, article_id) + "/comments")
    assert status == 200, body
    return {item["id"]: item for item in body["items"]}


# -- the page --------------------------------------------------------------------------------


class Watch:
    """What a page did that it must not: dialogs, script errors, requests elsewhere."""

    def __init__(self, page: Any, base_url: str) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.violations: list[str] = []
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on(
            "console",
            lambda m: self.violations.append(m.text) if "Content Security Policy" in m.text else 0,
        )
        self.host = urlsplit(base_url).netloc

    def check(self, page: Any) -> None:
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not self.dialogs, self.dialogs
        assert not self.errors, self.errors
        assert {urlsplit(url).netloc for url in self.requests} == {self.host}, self.requests


def open_page(browser: Any, server: Server, viewport: dict[str, int]) -> tuple[Any, Any, Watch]:
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    watch = Watch(page, server.base_url)
    page.goto(f"{server.base_url}/moderation")
    return context, page, watch


def sign_in(page: Any, token: str, remember: bool = False) -> None:
    from playwright.sync_api import expect

    page.get_by_label("Moderator token").fill(token)
    if remember:
        page.get_by_label(re.compile("Keep me signed in")).check()
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#desk")).to_be_visible()
    expect(page.locator("#queue-summary")).not_to_be_empty()


def open_queue(page: Any, queue: str, count: int | None = None) -> None:
    from playwright.sync_api import expect

    tab = page.locator(f'#queue-tabs button[data-queue="{queue}"]')
    tab.click()
    expect(page.locator("#queue-summary")).to_contain_text(queue.capitalize() + " in")
    expect(tab).to_have_attribute("aria-pressed", "true")
    if count is not None:
        expect(tab.locator(".count")).to_have_text(str(count))
        expect(page.locator("#queue-items .item")).to_have_count(count)


def card(page: Any, comment: dict[str, Any]) -> Any:
    return page.locator(f'#queue-items .item[data-id="{comment["id"]}"]')


def current_id(page: Any) -> str:
    return page.locator("#queue-items .item[aria-current=true]").get_attribute("data-id")


def said(page: Any, text: str, exact: bool = True) -> None:
    """The page announced `text`; else fail with the error it showed instead."""
    from playwright.sync_api import expect

    status = page.locator("#status")
    try:
        if exact:
            expect(status).to_have_text(text)
        else:
            expect(status).to_contain_text(text)
    except AssertionError as failed:
        shown = page.locator("#error").inner_text()
        raise AssertionError(f"the page said {status.inner_text()!r}, error {shown!r}") from failed


def shoot(page: Any, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / name))
    wanted = os.environ.get("MODERATION_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / name, Path(wanted) / name)


# -- the page and its assets over HTTP -------------------------------------------------------


def test_page_and_assets_are_served_with_their_policy(server: Server) -> None:
    page = exchange(server.port, "GET", "/moderation")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CSP
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    html = page.body.decode()
    # No inline script or style, nothing from another host.
    assert not re.search(r"<script(?![^>]*\ssrc=)", html), "inline script"
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html)
    for asset, kind in (("moderation.js", "text/javascript"), ("moderation.css", "text/css")):
        reply = exchange(server.port, "GET", f"/moderation/{asset}")
        assert reply.status == 200 and reply.headers["content-type"].startswith(kind), asset
        assert reply.headers["cache-control"].startswith("public, max-age=")
        again = exchange(
            server.port,
            "GET",
            f"/moderation/{asset}",
            headers={"If-None-Match": reply.headers["etag"]},
        )
        assert again.status == 304 and not again.body
    script = exchange(server.port, "GET", "/moderation/moderation.js").body.decode()
    script = re.sub(r"^\s*//.*$", "", script, flags=re.M)  # the code, without its comments
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script, sink
    for bad in ("../routes.py", "index.html", "nope.js", "moderation.js%2F..", "%2e%2e"):
        assert exchange(server.port, "GET", f"/moderation/{bad}").status == 404, bad
    assert exchange(server.port, "HEAD", "/moderation").status == 200


def test_the_policy_blocks_inline_script(server: Server, browser: Any) -> None:
    context, page, watch = open_page(browser, server, DESKTOP)
    try:
        page.evaluate(
            """() => {
                window.__blocked = [];
                document.addEventListener('securitypolicyviolation',
                    (e) => window.__blocked.push(e.violatedDirective));
                const s = document.createElement('script');
                s.textContent = 'window.__pwned = "inline script"';
                document.body.appendChild(s);
                const d = document.createElement('div');
                d.innerHTML = '<img src="data:," onerror="window.__pwned=\\'handler\\'">'
                    + '<a id="js" href="javascript:window.__pwned=\\'url\\'">x</a>';
                document.body.appendChild(d);
                const st = document.createElement('style');
                st.textContent = 'body { display: none }';
                document.head.appendChild(st);
            }"""
        )
        page.click("#js")
        page.wait_for_function("window.__blocked.length >= 3")
        blocked = page.evaluate("window.__blocked")
        assert any(d.startswith("script-src") for d in blocked), blocked
        assert any(d.startswith("style-src") for d in blocked), blocked
        assert page.locator("body").is_visible()  # the injected style did not apply
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert not watch.dialogs
    finally:
        context.close()


# -- a moderator's session ------------------------------------------------------------------


def test_a_moderator_works_each_queue(server: Server, browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    en = sample_ids(server, "en")
    held, open_article = en[0], en[1]
    set_mode(server, "en", held, "pre")
    title = call(server, "GET", article_path("en", held))[1]["title"]
    # Pending: two comments held by pre-moderation, oldest first.
    first = post_comment(server, "en", held, "Clear summary of the measurements.", "Mina")
    second = post_comment(server, "en", held, "BUY CHEAP WATCHES www.spam.example", "Promo")
    # Withheld and reported: three clients report one comment; one client another.
    noisy = post_comment(server, "en", open_article, "You are all idiots.", "Troll")
    for n in range(3):
        report(server, noisy, "abuse", f"192.0.2.{10 + n}")
    reported = post_comment(server, "en", open_article, "Off-topic: who won the match?", "Fan")
    report(server, reported, "off_topic", "192.0.2.20")
    # Notices: a comment someone says is illegal.
    accused = post_comment(server, "en", open_article, "Mr X stole the money.", "Whistle")
    sent = notice(
        server,
        accused,
        "Defamation of a named person.",
        law="Defamation Act",
        notifier_name="Jo Notifier",
        notifier_email="jo@example.org",
    )
    harmless = post_comment(
        server, "en", open_article, "The mayor's plan costs too much.", "Critic"
    )
    cleared = notice(server, harmless, "Insults the mayor.")
    assert call(server, "GET", article_path("en", held) + "/comments")[1]["total"] == 0

    context, page, watch = open_page(browser, server, DESKTOP)
    try:
        sign_in(page, EN_TOKEN)
        expect(page.locator("#who")).to_have_text("Moderating: en")
        assert page.locator("#language option").all_inner_texts() == ["English (en)"]
        counts = {
            q: page.locator(f'#queue-tabs button[data-queue="{q}"] .count').inner_text()
            for q in ("pending", "withheld", "reported", "notices", "rejected")
        }
        assert counts == {
            "pending": "2", "withheld": "1", "reported": "2", "notices": "2", "rejected": "0",
        }  # fmt: skip

        # Pending, oldest first, each item with its text, author, article and reason.
        items = page.locator("#queue-items .item")
        expect(items).to_have_count(2)
        assert items.nth(0).get_attribute("data-id") == first["id"]
        one = card(page, first)
        expect(one.locator(".text")).to_have_text(first["content"])
        expect(one.locator(".author")).to_have_text("Mina")
        link = one.locator("a.article")
        expect(link).to_have_text(title)
        assert link.get_attribute("href") == article_path("en", held)
        expect(one.locator(".why")).to_contain_text("premoderation")
        expect(one.locator(".why")).to_contain_text("automated")
        expect(page.locator(".shortcuts")).to_contain_text("approve the current comment")
        shoot(page, tmp_path, "moderation-queue.png")

        # j and k move; a approves the current one.
        assert current_id(page) == first["id"]
        page.keyboard.press("j")
        assert current_id(page) == second["id"]
        expect(card(page, second)).to_be_focused()
        page.keyboard.press("k")
        assert current_id(page) == first["id"]
        page.keyboard.press("a")
        said(page, f"Approved comment {first['id']}.")
        expect(items).to_have_count(1)
        assert current_id(page) == second["id"]

        # r asks for a reason; typing in the form does not fire shortcuts.
        page.keyboard.press("r")
        reason = card(page, second).get_by_label("Reason", exact=True)
        expect(reason).to_be_focused()
        reason.select_option("spam")
        note = card(page, second).get_by_label("Note for moderators (optional)")
        note.click()
        page.keyboard.type("a repeat advertiser, j k a r")
        expect(note).to_have_value("a repeat advertiser, j k a r")
        explanation = "Advertising is not allowed in comments."
        card(page, second).get_by_label(re.compile("Explanation for the author")).fill(explanation)
        card(page, second).evaluate("item => item.scrollIntoView({block: 'start'})")
        shoot(page, tmp_path, "moderation-decision.png")
        card(page, second).get_by_role("button", name="Reject", exact=True).click()
        said(page, f"Rejected comment {second['id']} (Spam).")
        expect(page.locator("#queue-items .empty")).to_be_visible()
        expect(page.locator('#queue-tabs button[data-queue="pending"] .count')).to_have_text("0")

        # Withheld by reports: the reports by reason and the rule; approve it back.
        open_queue(page, "withheld", 1)
        troll = card(page, noisy)
        expect(troll.locator(".reports")).to_contain_text("abuse: 3")
        expect(troll.locator(".why")).to_contain_text("reports")
        troll.get_by_role("button", name="Approve").click()
        said(page, f"Approved comment {noisy['id']}.")

        # Reported (still visible): feature it instead (not a decision: reports stay).
        open_queue(page, "reported", 1)
        fan = card(page, reported)
        expect(fan.locator(".reports")).to_contain_text("off_topic: 1")
        fan.get_by_role("button", name="Feature").click()
        said(page, f"Featured comment {reported['id']}.")
        expect(card(page, reported).get_by_role("button", name="Unfeature")).to_be_visible()
        expect(card(page, reported).locator(".badge.featured")).to_be_visible()

        # Notices: the explanation and the notifier's contact; decided illegal with grounds.
        open_queue(page, "notices", 2)
        told = card(page, accused)
        expect(told.locator(".notice .text")).to_have_text("Defamation of a named person.")
        # The contract's queue names no notifier contact; shown when the API gives it.
        queued = call(server, "GET", "/api/v1/en/moderation/queue?queue=notices", token=EN_TOKEN)
        if "notifier_email" in queued[1]["items"][0]["notices"][0]:
            expect(told.locator(".notice")).to_contain_text("jo@example.org")
        told.get_by_role("button", name="Decide notice…").click()
        told.get_by_role("radio", name=re.compile("^Illegal")).check()
        grounds = "Names a person and accuses them of a crime without a source."
        told.get_by_label(re.compile("^Grounds")).fill(grounds)
        told.get_by_role("button", name="Decide notice", exact=True).click()
        said(
            page,
            f"Rejected comment {accused['id']} (Illegal content); notice {sent['id']} decided"
            " illegal.",
            exact=False,
        )
        expect(page.locator('#queue-tabs button[data-queue="notices"] .count')).to_have_text("1")
        # The other notice: not illegal, and the comment approved (it stays visible).
        fine = card(page, harmless)
        fine.get_by_role("button", name="Decide notice…").click()
        fine.get_by_role("radio", name="Not illegal").check()
        expect(fine.get_by_label("Then the comment is")).to_have_value("approve")
        not_grounds = "Criticism of a public official's policy, not an insult."
        fine.get_by_label(re.compile("^Grounds")).fill(not_grounds)
        fine.get_by_role("button", name="Decide notice", exact=True).click()
        said(
            page,
            f"Approved comment {harmless['id']}; notice {cleared['id']} decided not illegal.",
        )
        expect(page.locator('#queue-tabs button[data-queue="notices"] .count')).to_have_text("0")

        # Rejected: both removals, with the decision that put them there.
        open_queue(page, "rejected", 2)
        spam = card(page, second)
        expect(spam.locator(".why")).to_contain_text("Spam")
        expect(spam.locator(".why")).to_contain_text("by moderator ana")
        expect(spam.locator(".why")).to_contain_text("a repeat advertiser")

        # The article's settings: closed, first-comment mode.
        fan = None
        page.get_by_label("Article id").fill(open_article)
        page.get_by_role("button", name="Load settings").click()
        expect(page.locator("#settings-form")).to_be_visible()
        expect(page.get_by_label("Moderation mode")).to_have_value("")
        page.get_by_label("Moderation mode").select_option("first")
        page.get_by_label("Closed to new comments").check()
        page.get_by_role("button", name="Save settings").click()
        said(page, "now first, closed", exact=False)

        # The log, followed live: every action above is in it, newest first.
        log = page.locator("#log-items li")
        expect(log.first).to_contain_text(cleared["id"], timeout=15_000)
        expect(page.locator("#log-items")).to_contain_text(sent["id"])
        texts = log.all_inner_texts()
        assert any("approve" in t and first["id"] in t and "ana" in t for t in texts), texts
        # Followed live: a comment posted elsewhere shows up in the log and in the counts
        # without the moderator doing anything.
        late = post_comment(server, "en", held, "Posted while the page watches.", "Late")
        expect(log.first).to_contain_text(late["id"], timeout=15_000)
        expect(log.first).to_contain_text("create")
        pending = page.locator('#queue-tabs button[data-queue="pending"] .count')
        expect(pending).to_have_text("1")

        # Transparency figures for today.
        page.get_by_role("button", name="Show figures").click()
        figures = page.locator("#figures-out")
        expect(figures).to_contain_text("Received")
        removals = figures.locator("table", has_text="Removals by reason")
        expect(removals).to_contain_text("spam")
        expect(removals).to_contain_text("illegal_content")
        watch.check(page)
        assert not watch.violations, watch.violations
        # The token never travelled in an address, and no cookie was set.
        assert not any(EN_TOKEN in url for url in watch.requests)
        assert context.cookies() == []
        assert page.evaluate("sessionStorage.length") == 0  # not asked to keep it
    finally:
        context.close()

    # The public API shows exactly those effects.
    assert set(reader_ids(server, "en", held)) == {first["id"]}
    assert call(server, "GET", article_path("en", held) + f"/comments/{second['id']}")[0] == 404
    status, own = call(
        server,
        "GET",
        article_path("en", held) + f"/comments/{second['id']}",
        token=second["author_token"],
    )
    assert status == 200 and own["status"] == "rejected"
    assert own["moderation"]["reason"] == "spam" and not own["moderation"]["automated"]
    assert own["moderation"]["explanation"] == explanation
    visible = reader_ids(server, "en", open_article)
    assert set(visible) == {noisy["id"], reported["id"], harmless["id"]}
    assert visible[reported["id"]]["featured"] is True
    assert visible[noisy["id"]]["featured"] is False
    status, decided = call(
        server, "GET", f"/api/v1/notices/{sent['id']}", token=sent["access_token"]
    )
    assert status == 200 and decided["status"] == "decided"
    assert decided["decision"]["outcome"] == "illegal"
    assert decided["decision"]["grounds"] == grounds
    status, decided = call(
        server, "GET", f"/api/v1/notices/{cleared['id']}", token=cleared["access_token"]
    )
    assert status == 200 and decided["decision"]["outcome"] == "not_illegal"
    assert decided["decision"]["grounds"] == not_grounds
    status, settings = call(server, "GET", article_path("en", open_article) + "/comments/settings")
    assert status == 200 and settings["mode"] == "first" and settings["closed"] is True
    status, closed = call(
        server,
        "POST",
        article_path("en", open_article) + "/comments",
        json={"author": "late", "content": "Too late?"},
    )
    assert status == 403 and closed == {"detail": "Comments are closed"}
    status, log_body = call(server, "GET", "/api/v1/en/moderation/log?limit=500", token=EN_TOKEN)
    assert status == 200
    by_ana = [
        (e["action"], e["comment_id"], e["notice_id"])
        for e in log_body["items"]
        if e["moderator"] == "ana"
    ]
    assert by_ana == [
        ("approve", first["id"], None),
        ("reject", second["id"], None),
        ("approve", noisy["id"], None),
        ("feature", reported["id"], None),
        ("reject", accused["id"], sent["id"]),
        ("approve", harmless["id"], cleared["id"]),
    ], by_ana
    rejects = [e for e in log_body["items"] if e["action"] == "reject"]
    assert [(e["reason"], e["note"]) for e in rejects] == [
        ("spam", "a repeat advertiser, j k a r"),
        ("illegal_content", None),
    ]


def test_a_moderator_of_one_language_sees_and_acts_on_no_other(
    server: Server, browser: Any
) -> None:
    from playwright.sync_api import expect

    de, fr = sample_ids(server, "de")[0], sample_ids(server, "fr")[0]  # fr: "économie 2026-11-03"
    set_mode(server, "de", de, "pre")
    set_mode(server, "fr", fr, "pre")
    other = post_comment(server, "de", de, "Ein Kommentar auf Deutsch.", "Uwe")
    own = post_comment(server, "fr", fr, "Un commentaire en français.", "Zoé")

    context, page, watch = open_page(browser, server, PHONE)
    try:
        sign_in(page, FR_TOKEN, remember=True)
        expect(page.locator("#who")).to_have_text("Moderating: fr")
        assert page.locator("#language option").all_inner_texts() == ["Français (fr)"]
        expect(card(page, own).locator(".text")).to_have_text(own["content"])
        assert card(page, own).locator("a.article").get_attribute("href") == article_path("fr", fr)
        expect(page.locator(f'.item[data-id="{other["id"]}"]')).to_have_count(0)
        assert page.locator("#queue-items").inner_text().count("Deutsch") == 0
        # Settings of another language's article: the page shows the API's refusal as text.
        page.evaluate("document.getElementById('language').add(new Option('de', 'de'))")
        page.select_option("#language", "de")
        expect(page.locator("#error")).to_contain_text("403: Not a moderator of this language")
        page.select_option("#language", "fr")
        # Kept for the tab only when asked: a reload stays signed in, from sessionStorage.
        assert page.evaluate("sessionStorage.getItem('news-moderation-token')") == FR_TOKEN
        page.reload()
        expect(page.locator("#who")).to_have_text("Moderating: fr")
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("Moderator token")).to_be_visible()
        expect(page.get_by_label("Moderator token")).to_be_focused()
        assert page.evaluate("sessionStorage.length") == 0
        expect(page.locator("#desk")).to_be_hidden()
        assert page.locator("#queue-items .item").count() == 0
        page.reload()
        expect(page.locator("#desk")).to_be_hidden()
        # A token that is no moderator's.
        page.get_by_label("Moderator token").fill("not-a-token")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#error")).to_contain_text("401")
        expect(page.locator("#desk")).to_be_hidden()
        assert not any(FR_TOKEN in url for url in watch.requests)
        assert context.cookies() == []
        watch.errors.clear()  # the forced language select above is the test's own doing
        watch.check(page)
    finally:
        context.close()

    # The API itself refuses the other language: queue, decision, settings, log.
    comment = article_path("de", de) + f"/comments/{other['id']}"
    refused = {"detail": "Not a moderator of this language"}
    for method, path, body in (
        ("GET", "/api/v1/de/moderation/queue?queue=pending", None),
        ("POST", comment + "/decision", {"action": "approve"}),
        ("PUT", article_path("de", de) + "/comments/settings", {"mode": None, "closed": True}),
        ("GET", "/api/v1/de/moderation/log", None),
    ):
        assert call(server, method, path, token=FR_TOKEN, json=body) == (403, refused), path
    assert call(server, "GET", comment, token=None)[0] == 404  # still pending
    assert call(server, "GET", article_path("de", de) + "/comments/settings")[1]["closed"] is False


def _boxes_inside(page: Any) -> list[str]:
    """Every element inside each queue item lies within the item's box; the page does not
    scroll sideways. Returns what does not (empty when all is well)."""
    return page.evaluate(
        """() => {
            const bad = [];
            const width = document.documentElement.clientWidth;
            if (document.documentElement.scrollWidth > width + 1)
                bad.push('page scrolls sideways: ' + document.documentElement.scrollWidth);
            for (const item of document.querySelectorAll('#queue-items .item, #log-items li')) {
                const box = item.getBoundingClientRect();
                if (box.left < -1 || box.right > width + 1)
                    bad.push('item ' + item.dataset.id + ' ' + box.left + '..' + box.right);
                // Texts from the API do not overlap one another: a direction override
                // that escaped its element would drag its text over its neighbour's.
                const texts = [...item.querySelectorAll('bdi, a, time, .text')];
                for (let i = 0; i < texts.length; i++)
                    for (let j = i + 1; j < texts.length; j++) {
                        if (texts[i].contains(texts[j]) || texts[j].contains(texts[i])) continue;
                        const a = texts[i].getBoundingClientRect();
                        const b = texts[j].getBoundingClientRect();
                        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
                        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
                        if (w > 1 && h > 1)
                            bad.push('overlap in ' + (item.dataset.id || 'log') + ': ' +
                                JSON.stringify(texts[i].textContent.slice(0, 30)) + ' and ' +
                                JSON.stringify(texts[j].textContent.slice(0, 30)));
                    }
                for (const inner of item.querySelectorAll('*')) {
                    const r = inner.getBoundingClientRect();
                    if (r.width === 0 && r.height === 0) continue;
                    if (r.left < box.left - 1 || r.right > box.right + 1 ||
                        r.top < box.top - 1 || r.bottom > box.bottom + 1)
                        bad.push(inner.tagName + '.' + inner.className + ' in ' +
                            (item.dataset.id || 'log') + ': ' + [r.left, r.right, r.top,
                            r.bottom].map(Math.round) + ' outside ' + [box.left, box.right,
                            box.top, box.bottom].map(Math.round));
                }
            }
            return bad;
        }"""
    )


def test_hostile_content_stays_text_inside_its_box(
    server: Server, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    it = sample_ids(server, "it")
    article = it[0]
    set_mode(server, "it", article, "pre")
    comments = [
        post_comment(
            server,
            "it",
            article,
            text,
            author=HOSTILE[(n + 1) % len(HOSTILE)][:80],
            client=f"198.51.100.{50 + n}",
        )
        for n, text in enumerate(HOSTILE)
    ]
    # A notice whose explanation and notifier are hostile too (on the 5,000-character word).
    notice(server, comments[5], HOSTILE[0] + HOSTILE[3], notifier_name=HOSTILE[1][:200])
    # A decision whose note, reason text and explanation are hostile: shown in the rejected
    # queue and the log.
    status, body = call(
        server,
        "POST",
        article_path("it", article) + f"/comments/{comments[1]['id']}/decision",
        token=ADMIN_TOKEN,
        json={
            "action": "reject",
            "reason": "other",
            "note": HOSTILE[0] + HOSTILE[2],
            "explanation": HOSTILE[1],
        },
    )
    assert status == 200, body

    for viewport in (PHONE, DESKTOP):
        context, page, watch = open_page(browser, server, viewport)
        try:
            sign_in(page, ADMIN_TOKEN)
            assert len(page.locator("#language option").all_inner_texts()) == 9
            page.select_option("#language", "it")
            expect(page.locator("#queue-summary")).to_contain_text("Italiano")
            expect(page.locator("#queue-items .item")).to_have_count(len(HOSTILE) - 1)
            # Each text is shown exactly as sent, as text.
            for comment in comments:
                if comment is comments[1]:
                    continue
                expect(card(page, comment).locator(".text").first).to_have_text(comment["content"])
                expect(card(page, comment).locator(".author")).to_have_text(comment["author"])
            assert (
                page.locator("#queue-items img, #queue-items script, #queue-items svg").count() == 0
            )
            assert page.locator("#queue-items a").count() == len(HOSTILE) - 1  # the titles
            for href in page.locator("#queue-items a").evaluate_all("as => as.map(a => a.href)"):
                assert href.startswith(server.base_url + "/api/v1/it/articles/"), href
            assert _boxes_inside(page) == []
            open_queue(page, "notices", 1)
            expect(card(page, comments[5]).locator(".notice .text")).to_have_text(
                HOSTILE[0] + HOSTILE[3]
            )
            assert _boxes_inside(page) == []
            open_queue(page, "rejected", 1)
            expect(card(page, comments[1]).locator(".why")).to_contain_text(HOSTILE[0])
            expect(page.locator("#log-items")).to_contain_text(HOSTILE[2], timeout=15_000)
            assert _boxes_inside(page) == []
            shoot(page, tmp_path, f"hostile-{viewport['width']}.png")

            # Still usable: the keyboard still works the queue.
            open_queue(page, "pending")
            assert _boxes_inside(page) == []
            shoot(page, tmp_path, f"hostile-pending-{viewport['width']}.png")
            page.locator("#queue-items").focus()
            page.keyboard.press("j")
            page.keyboard.press("j")
            target = current_id(page)
            page.keyboard.press("r")
            page.keyboard.press("Escape")
            expect(page.locator("#queue-items form")).to_have_count(0)
            assert target == comments[3]["id"]  # oldest first: 0, 2, 3 (1 is rejected)
            if viewport is DESKTOP:
                page.keyboard.press("a")
                said(page, f"Approved comment {target}.")
            page.wait_for_timeout(500)  # any deferred handler would have run by now
            watch.check(page)
            assert not watch.violations, watch.violations
        finally:
            context.close()
    assert set(reader_ids(server, "it", article)) == {comments[3]["id"]}


def test_keyboard_labels_focus_and_paging_at_360_px(
    server: Server, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    article = sample_ids(server, "es")[0]
    set_mode(server, "es", article, "pre")
    posted = [
        post_comment(server, "es", article, f"Comentario número {n}.", f"Lector {n}")
        for n in range(23)
    ]
    context, page, watch = open_page(browser, server, PHONE)
    try:
        sideways = "document.documentElement.scrollWidth > document.documentElement.clientWidth"
        assert page.evaluate(sideways) is False
        # The sign-in form: labelled, and the first thing focused.
        expect(page.get_by_label("Moderator token")).to_be_focused()
        sign_in(page, ADMIN_TOKEN)
        page.get_by_label("Language").select_option("es")
        expect(page.locator("#queue-items .item")).to_have_count(20)
        expect(page.locator("#page-info")).to_have_text("Page 1 of 2")
        shoot(page, tmp_path, "queue-360.png")
        card(page, posted[0]).get_by_role("button", name="Reject…").click()
        # Every control has a label; nothing jumps the focus order; focus is visible.
        unlabelled = page.evaluate(
            """() => [...document.querySelectorAll('input, select, textarea, button')]
                .filter((c) => c.offsetParent !== null)
                .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
                    && !(c.tagName === 'BUTTON' && c.textContent.trim()))
                .map((c) => c.outerHTML.slice(0, 80))"""
        )
        assert unlabelled == []
        assert page.evaluate(
            "[...document.querySelectorAll('[tabindex]')].every((e) => e.tabIndex <= 0)"
        )
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Refresh").focus()
        page.keyboard.press("Tab")  # keyboard focus: :focus-visible applies
        outline = page.evaluate(
            """() => { const s = getComputedStyle(document.activeElement);
                return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"""
        )
        assert outline[0] != "none" and outline[1] >= 2, outline
        assert page.evaluate(sideways) is False

        # j and k cross pages, oldest first.
        page.locator("#queue-items").focus()
        assert current_id(page) == posted[0]["id"]
        for _ in range(20):
            page.keyboard.press("j")
        expect(page.locator("#page-info")).to_have_text("Page 2 of 2")
        expect(page.locator("#queue-items .item")).to_have_count(3)
        assert current_id(page) == posted[20]["id"]
        page.keyboard.press("k")
        expect(page.locator("#page-info")).to_have_text("Page 1 of 2")
        expect(page.locator("#queue-items .item[aria-current=true]")).to_have_attribute(
            "data-id", posted[19]["id"]
        )
        # Newest first on request; the pager's buttons follow.
        page.get_by_label("Order").select_option("newest")
        expect(page.locator("#queue-items .item").first).to_have_attribute(
            "data-id", posted[-1]["id"]
        )
        expect(page.get_by_role("button", name="Previous page")).to_be_disabled()
        page.get_by_role("button", name="Next page").click()
        expect(page.locator("#queue-items .item").last).to_have_attribute(
            "data-id", posted[0]["id"]
        )
        expect(page.get_by_role("button", name="Next page")).to_be_disabled()
        assert page.evaluate(sideways) is False

        # An error from the API is shown as its text: the author erased the comment meanwhile.
        gone = posted[0]
        erased = server.request(
            "DELETE",
            article_path("es", article) + f"/comments/{gone['id']}",
            headers={"Authorization": f"Bearer {gone['author_token']}"},
        )
        assert erased.status == 204
        card(page, gone).get_by_role("button", name="Approve").click()
        expect(card(page, gone).locator(".card-error")).to_have_text(
            "Not done: 404: Comment not found"
        )
        expect(page.locator("#error")).to_contain_text("404: Comment not found")
        page.get_by_role("button", name="Refresh").click()
        expect(page.locator('#queue-tabs button[data-queue="pending"] .count')).to_have_text("22")
        expect(card(page, gone)).to_have_count(0)
        watch.check(page)
    finally:
        context.close()
