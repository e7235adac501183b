"""Moderation through the HTTP stack, over SQLite and PostgreSQL (docs/api.md §12,
docs/moderation.md): the create rules in their order, authors, reports, notices, moderators'
scope, decisions, the log, settings and the transparency figures."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import falcon.testing
import pytest

from app.comments import ArticleFacts
from app.timestamps import format_timestamp
from tests.comments.support import ADMIN_TOKEN, Client, MakeClient, public

A1 = "/api/v1/en/articles/a1"
COMMENTS = f"{A1}/comments"
KO = "/api/v1/ko/articles/%EA%B2%BD%EC%A0%9C-1/comments"
FR_TOKEN, EN_TOKEN = "fr-moderator-token", "en-moderator-token"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ADMIN = bearer(ADMIN_TOKEN)


@pytest.fixture
def moderators(tmp_path: Path) -> Path:
    path = tmp_path / "moderators"
    lines = [
        "# name languages sha256(token)",
        f"frida fr {hashlib.sha256(FR_TOKEN.encode()).hexdigest()}",
        f"emma en,ko {hashlib.sha256(EN_TOKEN.encode()).hexdigest()}",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def terms(tmp_path: Path) -> Path:
    directory = tmp_path / "terms"
    directory.mkdir()
    (directory / "en.banned").write_text("# spam words\nviagra\ncasino*\n")
    (directory / "en.suspect").write_text("idiot\n")
    (directory / "ko.banned").write_text("바보\n")
    return directory


@pytest.fixture
def mod(make_client: MakeClient, moderators: Path, terms: Path) -> Client:
    return make_client(moderators_file=moderators, moderation_terms=terms)


def create(client: Client, content: str, **kwargs: Any) -> falcon.testing.Result:
    body = {"author": kwargs.pop("author", "Ann"), "content": content}
    return client.simulate_post(kwargs.pop("path", COMMENTS), json=body, **kwargs)


def queue(client: Client, name: str, token: str = ADMIN_TOKEN, language: str = "en") -> Any:
    result = client.simulate_get(
        f"/api/v1/{language}/moderation/queue",
        params={"queue": name, "page_size": "100"},
        headers=bearer(token),
    )
    assert result.status_code == 200, result.text
    return result.json


def decide(client: Client, comment: dict[str, Any], token: str = ADMIN_TOKEN, **body: Any) -> Any:
    path = f"/api/v1/{comment['language']}/articles/{comment['article_id']}/comments"
    return client.simulate_post(
        f"{path}/{comment['id']}/decision", json=body, headers=bearer(token)
    )


def visible_ids(client: Client, path: str = COMMENTS) -> set[str]:
    page = client.simulate_get(path, params={"page_size": "100"}).json
    return {c["id"] for c in page["items"]}


def log(client: Client, language: str = "en", after: int | None = None) -> Any:
    params = {"limit": "500"} if after is None else {"limit": "500", "after": str(after)}
    result = client.simulate_get(f"/api/v1/{language}/moderation/log", params=params, headers=ADMIN)
    assert result.status_code == 200, result.text
    return result.json


# -- the create rules, in their order ------------------------------------------------------


def test_defaults_publish_at_once(client: Client) -> None:
    created = create(client, "Plain words").json
    assert (created["status"], created["moderation"]) == ("visible", None)
    assert created["id"] in visible_ids(client)


@pytest.mark.parametrize(
    ("mode", "content", "status", "reason"),
    [
        ("post", "see viagra here", "rejected", "banned_term"),  # 3 before 4..7
        ("pre", "VIAGRA", "rejected", "banned_term"),
        ("pre", "you idiot", "withheld", "suspect_term"),  # 4 before 5..7
        ("links", "an idiot www.x.org", "withheld", "suspect_term"),
        ("links", "see https://x.org", "pending", "link"),  # 5
        ("links", "see WWW.x.org", "pending", "link"),
        ("links", "no link here", "visible", None),
        ("first", "hello there", "pending", "first_comment"),  # 6
        ("pre", "hello there", "pending", "premoderation"),  # 7
        ("post", "idiots everywhere", "visible", None),  # whole words only
        ("post", "casinos are fun", "rejected", "banned_term"),  # casino*: prefix
    ],
)
def test_rules_in_order(
    make_client: MakeClient, terms: Path, mode: str, content: str, status: str, reason: str | None
) -> None:
    client = make_client(moderation_terms=terms, moderation_mode=mode)
    created = create(client, content)
    assert created.status_code == 201, created.text
    body = created.json
    assert body["status"] == status
    assert (body["moderation"] or {}).get("reason") == reason
    if reason is not None:
        assert body["moderation"]["automated"] is True
    assert (body["id"] in visible_ids(client)) == (status == "visible")


def test_banned_term_in_the_author_name(mod: Client) -> None:
    assert create(mod, "fine text", author="Viagra Sales").json["status"] == "rejected"


def test_cjk_terms_match_inside_words(mod: Client) -> None:
    created = create(mod, "정말바보같은기사", path=KO)
    assert created.json["status"] == "rejected"


def test_first_comment_then_trusted(make_client: MakeClient) -> None:
    client = make_client(moderation_mode="first")
    first = create(client, "my first").json
    assert first["status"] == "pending"
    token = bearer(first["author_token"])
    assert create(client, "my second", headers=token).json["status"] == "pending"
    assert decide(client, first, action="approve").status_code == 200
    # Once the author has a visible comment, their next ones are published at once.
    assert create(client, "my third", headers=token).json["status"] == "visible"
    # A new author still waits.
    assert create(client, "someone else").json["status"] == "pending"
    # An edit of the approved first comment keeps it visible: it is the author's visible one.
    edited = client.simulate_patch(
        f"{COMMENTS}/{first['id']}", json={"content": "my first, edited"}, headers=token
    )
    assert edited.json["status"] == "visible"


def test_closed_article_refuses_before_anything_else(make_client: MakeClient) -> None:
    client = make_client()
    put = client.simulate_put(
        f"{COMMENTS}/settings", json={"mode": None, "closed": True}, headers=ADMIN
    )
    assert put.status_code == 200 and put.json["closed"] is True
    refused = create(client, "late")
    assert refused.status_code == 403
    assert refused.json == {"detail": "Comments are closed"}
    assert client.simulate_get(f"{COMMENTS}/count").json["count"] == 0
    # Reopened: comments are taken again.
    client.simulate_put(f"{COMMENTS}/settings", json={"closed": False}, headers=ADMIN)
    assert create(client, "late").status_code == 201


def test_closed_by_age(build: Callable[..., Client], dsn: str) -> None:
    old = datetime.now(UTC) - timedelta(days=10)
    facts = {
        ("en", "a1"): ArticleFacts("Old news", old),
        ("en", "a2"): ArticleFacts("Fresh news", old + timedelta(days=9)),
    }
    client = build(
        dsn,
        facts=lambda language, article_id: facts.get((language, article_id)),
        comments_close_after_days=7,
    )
    refused = create(client, "too late")
    assert refused.status_code == 403 and refused.json == {"detail": "Comments are closed"}
    assert create(client, "in time", path="/api/v1/en/articles/a2/comments").status_code == 201
    answer = client.simulate_get(f"{COMMENTS}/settings").json
    assert answer["closed"] is False  # the article's own setting
    assert answer["closes_at"] == format_timestamp(old + timedelta(days=7), microseconds=True)
    # The queue shows each comment with its article's title.
    moderated = client.simulate_get(
        "/api/v1/en/moderation/queue", params={"queue": "pending"}, headers=ADMIN
    )
    assert moderated.json["total"] == 0


def test_duplicate_by_author_or_client(client: Client) -> None:
    first = create(client, "Same words").json
    again = create(client, " Same words ")  # after trimming: the same
    assert again.status_code == 409 and again.json == {"detail": "Duplicate comment"}
    # The same author from another address is still a duplicate.
    token = bearer(first["author_token"])
    from_elsewhere = create(client, "Same words", headers=token, remote_addr="198.51.100.9")
    assert from_elsewhere.status_code == 409
    # Another author from another address is not; nor another article.
    assert create(client, "Same words", remote_addr="198.51.100.10").status_code == 201
    assert create(client, "Same words", path="/api/v1/en/articles/a2/comments").status_code == 201


# -- authors -----------------------------------------------------------------------------


def test_author_token_identifies_the_author(make_client: MakeClient) -> None:
    client = make_client(moderation_mode="pre")
    first = create(client, "one").json
    token = first["author_token"]
    second = create(client, "two", headers=bearer(token)).json
    assert second["author_token"] == token
    assert create(client, "three").json["author_token"] != token
    unknown = create(
        client, "four", headers=bearer(token[:-1] + ("A" if token[-1] != "A" else "B"))
    )
    assert unknown.status_code == 401 and unknown.json == {"detail": "Unknown author token"}
    # The author sees their pending comment with its statement of reasons; readers do not.
    path = f"{COMMENTS}/{first['id']}"
    assert client.simulate_get(path).status_code == 404
    own = client.simulate_get(path, headers=bearer(token))
    assert own.status_code == 200
    assert own.json["status"] == "pending"
    statement = own.json["moderation"]
    assert statement["reason"] == "premoderation" and statement["automated"] is True
    assert statement["explanation"] and statement["redress"]
    # Another author's token reads as a reader.
    other = create(client, "five").json["author_token"]
    assert client.simulate_get(path, headers=bearer(other)).status_code == 404


def test_idempotent_replay_returns_the_same_token(client: Client) -> None:
    key = {"Idempotency-Key": "same-1"}
    first = create(client, "replayed", headers=key).json
    again = create(client, "replayed", headers=key)
    assert again.status_code == 201 and again.json == first


def test_edit_window_and_rules_again(make_client: MakeClient, terms: Path) -> None:
    client = make_client(moderation_terms=terms, comment_edit_seconds=2)
    created = create(client, "first text").json
    path, token = f"{COMMENTS}/{created['id']}", bearer(created["author_token"])
    edited = client.simulate_patch(path, json={"content": "second text"}, headers=token)
    assert edited.status_code == 200, edited.text
    assert edited.json["content"] == "second text" and edited.json["edited_at"]
    assert client.simulate_get(path).json["content"] == "second text"
    # A rule applies to the new text: the comment takes its status.
    held = client.simulate_patch(path, json={"content": "you idiot"}, headers=token)
    assert held.json["status"] == "withheld"
    assert client.simulate_get(path).status_code == 404
    # Someone else's token cannot edit; no token is a 401.
    other = bearer(create(client, "other").json["author_token"])
    assert client.simulate_patch(path, json={"content": "x"}, headers=other).status_code == 404
    assert client.simulate_patch(path, json={"content": "x"}).status_code == 401
    time.sleep(2.1)
    late = client.simulate_patch(path, json={"content": "late"}, headers=token)
    assert late.status_code == 409 and late.json == {"detail": "Edit window closed"}


def test_checks_on_one_comment_come_in_order(client: Client) -> None:
    created = create(client, "ordered").json
    token = bearer(created["author_token"])
    unknown = "/api/v1/en/articles/zz/comments/" + created["id"]
    # PATCH: token (401), body (422), then the article (404).
    assert client.simulate_patch(unknown, json={"content": ""}).status_code == 401
    assert client.simulate_patch(unknown, json={"content": ""}, headers=token).status_code == 422
    assert client.simulate_patch(unknown, json={"content": "x"}, headers=token).status_code == 404
    # DELETE: token (401) before the article.
    assert client.simulate_delete(unknown).status_code == 401
    assert client.simulate_delete(unknown, headers=token).status_code == 404
    # GET: an unknown author token is a 401 before the article.
    assert client.simulate_get(unknown, headers=bearer("nobody")).status_code == 401


def test_edits_count_against_the_comment_rate_limit(make_client: MakeClient) -> None:
    client = make_client(comment_rate_count=3, comment_rate_seconds=60)
    created = create(client, "draft 0").json
    path, token = f"{COMMENTS}/{created['id']}", bearer(created["author_token"])
    statuses = [
        client.simulate_patch(path, json={"content": f"draft {n}"}, headers=token).status_code
        for n in range(1, 4)
    ]
    assert statuses == [200, 200, 429]


def test_rejected_comment_cannot_be_edited(mod: Client) -> None:
    created = create(mod, "buy viagra").json
    assert created["status"] == "rejected"
    path, token = f"{COMMENTS}/{created['id']}", bearer(created["author_token"])
    refused = mod.simulate_patch(path, json={"content": "clean"}, headers=token)
    assert refused.status_code == 409 and refused.json == {"detail": "Comment cannot be edited"}


def test_mine_export_and_erasure(client: Client) -> None:
    first = create(client, "mine one").json
    token = bearer(first["author_token"])
    create(client, "mine two", headers=token, path="/api/v1/en/articles/a2/comments")
    create(client, "mine three", headers=token, path="/api/v1/fr/articles/a1/comments")
    create(client, "not mine")
    mine = client.simulate_get("/api/v1/comments/mine", headers=token)
    assert mine.status_code == 200
    assert [c["content"] for c in mine.json["items"]] == ["mine one", "mine two", "mine three"]
    assert {c["status"] for c in mine.json["items"]} == {"visible"}
    assert client.simulate_get("/api/v1/comments/mine").status_code == 401
    # Erasing one, then all.
    assert client.simulate_delete(f"{COMMENTS}/{first['id']}", headers=token).status_code == 204
    assert len(client.simulate_get("/api/v1/comments/mine", headers=token).json["items"]) == 2
    assert client.simulate_delete("/api/v1/comments/mine", headers=token).status_code == 204
    assert client.simulate_get("/api/v1/comments/mine", headers=token).json == {"items": []}
    assert visible_ids(client, "/api/v1/fr/articles/a1/comments") == set()
    # Nothing of the erased comments' text or author is left in the store.
    store = client.service.store
    rows = store._run(
        lambda conn: conn.execute(
            "SELECT author, content, author_id, client_key, request_hash, mod_note"
            " FROM comments WHERE status = 'erased'"
        ).fetchall()
    )
    assert len(rows) == 3 and all(tuple(row) == ("", "", None, None, "", None) for row in rows)


# -- reports ----------------------------------------------------------------------------------


def report(client: Client, comment: dict[str, Any], address: str, reason: str = "spam") -> Any:
    return client.simulate_post(
        f"{COMMENTS}/{comment['id']}/reports",
        json={"reason": reason, "text": None},
        remote_addr=address,
    )


def test_distinct_reporters_withhold(make_client: MakeClient) -> None:
    client = make_client(reports_to_withhold=3)
    comment = create(client, "controversial").json
    for _ in range(3):  # one client's reports count once
        assert report(client, comment, "203.0.113.1").status_code == 202
    assert report(client, comment, "203.0.113.2", "abuse").json == {"status": "received"}
    assert comment["id"] in visible_ids(client)
    reported = queue(client, "reported")["items"]
    assert [c["id"] for c in reported] == [comment["id"]]
    assert reported[0]["reports"] == {"abuse": 1, "spam": 1}
    assert report(client, comment, "203.0.113.3").status_code == 202
    assert comment["id"] not in visible_ids(client)
    held = queue(client, "withheld")["items"][0]
    assert held["moderation"]["reason"] == "reports" and held["moderation"]["automated"]
    # Only visible comments can be reported.
    assert report(client, comment, "203.0.113.4").status_code == 404
    # Approval clears the reports; the next ones count afresh.
    assert decide(client, comment, action="approve").json["reports"] == {}
    assert queue(client, "reported")["total"] == 0
    assert report(client, comment, "203.0.113.1").status_code == 202
    assert comment["id"] in visible_ids(client)


def test_reports_and_notices_share_a_rate_limit(make_client: MakeClient) -> None:
    client = make_client(report_rate_count=2, report_rate_seconds=60)
    comment = create(client, "x").json
    assert report(client, comment, "203.0.113.7").status_code == 202
    notice = client.simulate_post(
        f"{COMMENTS}/{comment['id']}/notices",
        json={"explanation": "illegal", "good_faith": True},
        remote_addr="203.0.113.7",
    )
    assert notice.status_code == 201
    limited = report(client, comment, "203.0.113.7")
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"reason": "bad"}, ["body", "reason"]),
        ({"reason": "spam", "text": "x" * 1001}, ["body", "text"]),
        ({}, ["body", "reason"]),
    ],
)
def test_report_body_is_validated(client: Client, body: dict[str, Any], loc: list[str]) -> None:
    comment = create(client, "y").json
    result = client.simulate_post(f"{COMMENTS}/{comment['id']}/reports", json=body)
    assert result.status_code == 422
    assert result.json["detail"][0]["loc"] == loc


# -- notices ----------------------------------------------------------------------------------


def test_notice_end_to_end(mod: Client) -> None:
    comment = create(mod, "my neighbour lives at 1 Main St").json
    sent = mod.simulate_post(
        f"{COMMENTS}/{comment['id']}/notices",
        json={
            "explanation": "Publishes a private address.",
            "law": "GDPR art. 6",
            "notifier_name": "Neighbour",
            "notifier_email": "n@example.org",
            "good_faith": True,
        },
    )
    assert sent.status_code == 201, sent.text
    receipt = sent.json
    assert receipt["status"] == "received" and receipt["comment_id"] == comment["id"]
    follow = f"/api/v1/notices/{receipt['id']}"
    assert mod.simulate_get(follow).status_code == 401
    assert mod.simulate_get(follow, headers=bearer("wrong")).status_code == 404
    state = mod.simulate_get(follow, headers=bearer(receipt["access_token"])).json
    assert (state["status"], state["decision"], state["decided_at"]) == ("received", None, None)
    # In the notices queue, with the notifier's explanation and contact.
    item = queue(mod, "notices", EN_TOKEN)["items"][0]
    assert item["id"] == comment["id"]
    assert item["notices"][0]["explanation"] == "Publishes a private address."
    assert item["notices"][0]["notifier_email"] == "n@example.org"
    # `illegal` needs a reject with illegal_content.
    wrong = decide(
        mod,
        comment,
        EN_TOKEN,
        action="approve",
        notice_id=receipt["id"],
        notice_outcome="illegal",
        grounds="x",
    )
    assert wrong.status_code == 422
    decided = decide(
        mod,
        comment,
        EN_TOKEN,
        action="reject",
        reason="illegal_content",
        explanation="Your comment published a private address.",
        notice_id=receipt["id"],
        notice_outcome="illegal",
        grounds="GDPR art. 6: no lawful basis",
        note="checked with legal",
    )
    assert decided.status_code == 200, decided.text
    assert decided.json["status"] == "rejected"
    assert decided.json["moderation"]["moderator"] == "emma"
    assert comment["id"] not in visible_ids(mod)
    state = mod.simulate_get(follow, headers=bearer(receipt["access_token"])).json
    assert state["status"] == "decided"
    assert state["decision"]["outcome"] == "illegal"
    assert state["decision"]["grounds"] == "GDPR art. 6: no lawful basis"
    assert state["decision"]["automated"] is False and state["decision"]["redress"]
    assert queue(mod, "notices", EN_TOKEN)["total"] == 0
    # The author gets the statement of reasons.
    own = mod.simulate_get(
        f"{COMMENTS}/{comment['id']}", headers=bearer(comment["author_token"])
    ).json
    assert own["moderation"]["explanation"] == "Your comment published a private address."
    # One log entry for the decision, naming the notice.
    entries = [e for e in log(mod)["items"] if e["action"] == "reject"]
    assert len(entries) == 1 and entries[0]["notice_id"] == receipt["id"]
    # A decided notice cannot be decided again.
    again = decide(
        mod,
        comment,
        action="approve",
        notice_id=receipt["id"],
        notice_outcome="not_illegal",
        grounds="x",
    )
    assert again.status_code == 422


def test_notice_body_is_validated(client: Client) -> None:
    comment = create(client, "z").json
    path = f"{COMMENTS}/{comment['id']}/notices"
    nulls = {"law": None, "notifier_name": None, "notifier_email": None}
    sent = client.simulate_post(path, json={"explanation": "x", "good_faith": True, **nulls})
    assert sent.status_code == 201, sent.text
    for body, field in [
        ({"explanation": "x", "good_faith": False}, "good_faith"),
        ({"explanation": "", "good_faith": True}, "explanation"),
        ({"explanation": "x", "good_faith": True, "notifier_email": "no"}, "notifier_email"),
        ({"explanation": "x" * 5001, "good_faith": True}, "explanation"),
    ]:
        result = client.simulate_post(path, json=body)
        assert result.status_code == 422, body
        assert result.json["detail"][0]["loc"][:2] == ["body", field]


# -- moderators: scope and order of checks -----------------------------------------------------

MODERATOR_CALLS = [
    ("GET", "/api/v1/{lang}/moderation/queue", None),
    ("GET", "/api/v1/{lang}/moderation/log", None),
    ("POST", "/api/v1/{lang}/articles/a1/comments/01JD5Z3N8Q6V2K4M7R9T0W1X2Y/decision", {}),
    ("PUT", "/api/v1/{lang}/articles/a1/comments/settings", {"mode": "never"}),
]


@pytest.mark.parametrize(("method", "template", "body"), MODERATOR_CALLS)
def test_moderator_checks_come_in_order(mod: Client, method: str, template: str, body: Any) -> None:
    def ask(lang: str, token: str | None, query: str = "") -> falcon.testing.Result:
        headers = {} if token is None else bearer(token)
        return mod.simulate_request(
            method, template.format(lang=lang), json=body, headers=headers, query_string=query
        )

    assert ask("xx", None).status_code == 400  # language first
    assert ask("en", None).status_code == 401
    assert ask("en", "wrong").status_code == 401
    # A moderator of other languages: 403, before parameters (422) and existence (404).
    refused = ask("en", FR_TOKEN, "queue=nope&limit=0")
    assert refused.status_code == 403
    assert refused.json == {"detail": "Not a moderator of this language"}
    assert refused.headers["cache-control"] == "no-store"
    allowed = ask("en", EN_TOKEN, "queue=nope&limit=0")
    assert allowed.status_code in (422, 404)
    assert ask("fr", FR_TOKEN, "queue=nope&limit=0").status_code in (422, 404)


def test_a_moderator_sees_and_acts_on_their_languages_only(mod: Client) -> None:
    en = create(mod, "english words").json
    assert queue(mod, "rejected", FR_TOKEN, "fr")["total"] == 0
    assert decide(mod, en, FR_TOKEN, action="reject", reason="spam").status_code == 403
    assert (
        mod.simulate_delete(f"{COMMENTS}/{en['id']}", headers=bearer(FR_TOKEN)).status_code == 403
    )
    assert en["id"] in visible_ids(mod)
    assert decide(mod, en, EN_TOKEN, action="reject", reason="spam").status_code == 200
    assert en["id"] not in visible_ids(mod)
    transparency = mod.simulate_get("/api/v1/moderation/transparency", headers=bearer(FR_TOKEN))
    assert transparency.json["removals"] == {}  # fr sees none of en's figures
    everyone = mod.simulate_get("/api/v1/moderation/transparency", headers=ADMIN)
    assert everyone.json["removals"] == {"spam": 1}


def test_moderators_file_is_read_again_when_it_changes(mod: Client, moderators: Path) -> None:
    late = "late-token"
    with moderators.open("a") as file:
        file.write(f"lena it {hashlib.sha256(late.encode()).hexdigest()}\n")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if queue_status(mod, late, "it") == 200:
            break
        time.sleep(0.2)
    assert queue_status(mod, late, "it") == 200
    assert queue_status(mod, late, "en") == 403


def test_the_digest_of_an_empty_token_is_refused(tmp_path: Path) -> None:
    from app.comments.moderators import Moderators
    from app.config import ConfigError

    path = tmp_path / "moderators"
    path.write_text(f"nobody * {hashlib.sha256(b'').hexdigest()}\n")
    with pytest.raises(ConfigError, match="empty token"):
        Moderators(path, None)
    path.write_text(f"some en {hashlib.sha256(b'x').hexdigest()}\n")
    moderators = Moderators(path, "admin-token")
    assert moderators.identify("") is None
    assert moderators.identify("x") is not None and moderators.identify("admin-token") is not None


def queue_status(client: Client, token: str, language: str) -> int:
    return client.simulate_get(
        f"/api/v1/{language}/moderation/queue", headers=bearer(token)
    ).status_code


def test_terms_take_effect_without_a_restart(mod: Client, terms: Path) -> None:
    assert create(mod, "a gremlin wrote this").json["status"] == "visible"
    (terms / "en.banned").write_text("viagra\ngremlin\n")
    deadline = time.monotonic() + 5
    status = "visible"
    while status == "visible" and time.monotonic() < deadline:
        time.sleep(0.3)
        status = create(mod, f"a gremlin wrote this {time.monotonic()}").json["status"]
    assert status == "rejected"


# -- decisions, the log, settings ------------------------------------------------------------


def test_decisions_and_their_log(make_client: MakeClient) -> None:
    client = make_client(moderation_mode="pre")
    a, b = create(client, "first").json, create(client, "second").json
    pending = queue(client, "pending")
    assert [c["id"] for c in pending["items"]] == [a["id"], b["id"]]  # oldest first
    assert pending["items"][0]["article_title"] is None  # the stub has no titles
    assert decide(client, a, action="reject").status_code == 422  # needs a reason
    assert decide(client, b, action="feature").status_code == 422  # not visible
    approved = decide(client, a, action="approve", note="fine").json
    assert approved["status"] == "visible" and approved["moderation"]["moderator"] == "admin"
    featured = decide(client, a, action="feature").json
    assert featured["featured"] is True
    assert client.simulate_get(f"{COMMENTS}/{a['id']}").json["featured"] is True
    rejected = decide(client, b, action="reject", reason="off_topic").json
    assert rejected["status"] == "rejected"
    assert [c["id"] for c in queue(client, "rejected")["items"]] == [b["id"]]
    entries = log(client)["items"]
    assert [(e["action"], e["comment_id"], e["from"], e["to"]) for e in entries] == [
        ("create", a["id"], None, "pending"),
        ("create", b["id"], None, "pending"),
        ("approve", a["id"], "pending", "visible"),
        ("feature", a["id"], "visible", "visible"),
        ("reject", b["id"], "pending", "rejected"),
    ]
    assert entries[0]["automated"] is True and entries[0]["moderator"] is None
    assert entries[2]["moderator"] == "admin" and entries[2]["note"] == "fine"
    ids = [e["id"] for e in entries]
    assert ids == sorted(ids)
    # Following the log with its cursor.
    page = client.simulate_get(
        "/api/v1/en/moderation/log", params={"limit": "2"}, headers=ADMIN
    ).json
    assert [e["id"] for e in page["items"]] == ids[:2] and page["next"] == ids[1]
    rest = log(client, after=page["next"])
    assert [e["id"] for e in rest["items"]] == ids[2:] and rest["next"] == ids[-1]
    assert log(client, after=ids[-1]) == {"items": [], "next": ids[-1]}
    assert log(client, language="fr") == {"items": [], "next": None}
    # An erased comment cannot be decided.
    client.simulate_delete(f"{COMMENTS}/{a['id']}", headers=ADMIN)
    assert decide(client, a, action="approve").status_code == 404


def test_settings(client: Client) -> None:
    path = f"{COMMENTS}/settings"
    assert client.simulate_get(path).json == {
        "article_id": "a1",
        "language": "en",
        "mode": None,
        "closed": False,
        "closes_at": None,
    }
    assert client.simulate_put(path, json={"mode": "pre"}).status_code == 401
    put = client.simulate_put(path, json={"mode": "pre", "closed": False}, headers=ADMIN)
    assert put.json["mode"] == "pre"
    assert create(client, "held").json["status"] == "pending"
    assert client.simulate_get("/api/v1/en/articles/zz/comments/settings").status_code == 404
    bad = client.simulate_put(path, json={"mode": "never"}, headers=ADMIN)
    assert bad.status_code == 422


def test_transparency_figures(make_client: MakeClient, terms: Path) -> None:
    client = make_client(moderation_terms=terms)
    create(client, "buy viagra")  # an automated removal
    human = create(client, "rude").json
    decide(client, human, action="reject", reason="abuse")
    reported = create(client, "meh").json
    report(client, reported, "203.0.113.20", "off_topic")
    notice = client.simulate_post(
        f"{COMMENTS}/{reported['id']}/notices",
        json={"explanation": "defamation", "good_faith": True},
    ).json
    decide(
        client,
        reported,
        action="approve",
        notice_id=notice["id"],
        notice_outcome="not_illegal",
        grounds="opinion",
    )
    client.simulate_post(
        f"{COMMENTS}/{reported['id']}/notices",
        json={"explanation": "still bad", "good_faith": True},
    )
    figures = client.simulate_get("/api/v1/moderation/transparency", headers=ADMIN).json
    assert figures["notices"]["received"] == 2
    assert figures["notices"]["decided_not_illegal"] == 1
    assert figures["notices"]["decided_illegal"] == 0
    assert figures["notices"]["undecided"] == 1
    assert figures["notices"]["median_hours_to_decision"] >= 0
    assert figures["removals"] == {"abuse": 1, "banned_term": 1}
    assert (figures["automated_removals"], figures["human_removals"]) == (1, 1)
    assert figures["reports"] == {"off_topic": 1}
    # A range before everything counts nothing.
    empty = client.simulate_get(
        "/api/v1/moderation/transparency",
        params={"from": "2000-01-01", "to": "2000-12-31"},
        headers=ADMIN,
    ).json
    assert empty["notices"]["received"] == 0 and empty["removals"] == {}
    assert empty["notices"]["median_hours_to_decision"] is None
    assert (empty["from"], empty["to"]) == ("2000-01-01", "2000-12-31")
    # Bounds at the ends of what a timestamp holds count everything, and are no error.
    widest = client.simulate_get(
        "/api/v1/moderation/transparency",
        params={"from": "0001-01-01T00:00:00+14:00", "to": "9999-12-31T23:59:59-12:00"},
        headers=ADMIN,
    )
    assert widest.status_code == 200 and widest.json["notices"] == figures["notices"]


def test_nothing_here_is_cacheable(mod: Client) -> None:
    comment = create(mod, "c").json
    answers = [
        mod.simulate_get(f"{COMMENTS}/settings"),
        mod.simulate_get("/api/v1/en/moderation/queue", headers=ADMIN),
        mod.simulate_get("/api/v1/en/moderation/queue", headers=bearer(FR_TOKEN)),
        mod.simulate_get("/api/v1/moderation/transparency"),
        report(mod, comment, "203.0.113.30"),
        mod.simulate_get("/api/v1/notices/x", headers=bearer("y")),
    ]
    assert all(a.headers["cache-control"] == "no-store" for a in answers)


def test_public_reads_keep_their_shape(client: Client) -> None:
    created = create(client, "shape").json
    listed = client.simulate_get(COMMENTS).json["items"][0]
    assert listed == public(created)
