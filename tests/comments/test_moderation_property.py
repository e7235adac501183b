"""A property over random sequences of create, edit, report, notice, decide and erase
(docs/moderation.md): no reader operation (list, get, count, both batch counts) ever returns
a comment that is not `visible`, readers see every visible one, and the moderation log holds
every status change, so that replaying it gives each comment's status in the store."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.comments.support import ADMIN_TOKEN, Client, MakeClient

ARTICLES = ("a1", "a2")
TEXTS = ("hello", "see www.example.org", "you idiot", "buy viagra", "fine words", "ok")
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
CLIENTS = tuple(f"203.0.113.{n}" for n in range(1, 6))


def _path(article: str) -> str:
    return f"/api/v1/en/articles/{article}/comments"


class Moderation(RuleBasedStateMachine):
    client: Client

    def __init__(self) -> None:
        super().__init__()
        self.comments: list[tuple[str, str]] = []  # (article, id)
        self.tokens: list[str] = []
        self.notices: list[tuple[str, str, str]] = []  # (article, comment id, notice id)
        self.seen: dict[str, str] = {}  # the status each comment was last seen in
        self.log_after: int | None = None
        self.log: dict[str, list[dict[str, Any]]] = {}
        self.serial = itertools.count()

    @initialize()
    def start(self) -> None:
        self.client = MACHINE_CLIENT[0]()

    # -- what readers, authors and moderators do --------------------------------------------

    @rule(
        article=st.sampled_from(ARTICLES),
        text=st.sampled_from(TEXTS),
        same_author=st.booleans(),
        author=st.integers(0, 10),
    )
    def create(self, article: str, text: str, same_author: bool, author: int) -> None:
        headers = {}
        if same_author and self.tokens:
            headers = {"Authorization": f"Bearer {self.tokens[author % len(self.tokens)]}"}
        body = {"author": "Reader", "content": f"{text} {next(self.serial)}"}
        result = self.client.simulate_post(_path(article), json=body, headers=headers)
        assert result.status_code in (201, 403), result.text
        if result.status_code == 201:
            self.comments.append((article, result.json["id"]))
            self.tokens.append(result.json["author_token"])

    @rule(which=st.integers(0, 50), text=st.sampled_from(TEXTS), own=st.booleans())
    def edit(self, which: int, text: str, own: bool) -> None:
        if not self.comments:
            return
        article, comment_id = self.comments[which % len(self.comments)]
        token = self.tokens[which % len(self.tokens)] if own else self.tokens[0]
        result = self.client.simulate_patch(
            f"{_path(article)}/{comment_id}",
            json={"content": f"{text} {next(self.serial)}"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert result.status_code in (200, 404, 409), result.text

    @rule(which=st.integers(0, 50), address=st.sampled_from(CLIENTS))
    def report(self, which: int, address: str) -> None:
        if not self.comments:
            return
        article, comment_id = self.comments[which % len(self.comments)]
        result = self.client.simulate_post(
            f"{_path(article)}/{comment_id}/reports",
            json={"reason": "spam"},
            remote_addr=address,
        )
        assert result.status_code in (202, 404), result.text

    @rule(which=st.integers(0, 50))
    def notice(self, which: int) -> None:
        if not self.comments:
            return
        article, comment_id = self.comments[which % len(self.comments)]
        result = self.client.simulate_post(
            f"{_path(article)}/{comment_id}/notices",
            json={"explanation": "illegal", "good_faith": True},
        )
        assert result.status_code in (201, 404), result.text
        if result.status_code == 201:
            self.notices.append((article, comment_id, result.json["id"]))

    @rule(
        which=st.integers(0, 50),
        action=st.sampled_from(["approve", "reject", "feature", "unfeature"]),
        settle=st.booleans(),
    )
    def decide(self, which: int, action: str, settle: bool) -> None:
        if not self.comments:
            return
        article, comment_id = self.comments[which % len(self.comments)]
        body: dict[str, Any] = {"action": action}
        if action == "reject":
            body["reason"] = "spam"
        open_notices = [n for n in self.notices if n[1] == comment_id]
        if settle and open_notices and action in ("approve", "reject"):
            body |= {
                "notice_id": open_notices[0][2],
                "notice_outcome": "not_illegal",
                "grounds": "opinion",
            }
        result = self.client.simulate_post(
            f"{_path(article)}/{comment_id}/decision", json=body, headers=ADMIN
        )
        assert result.status_code in (200, 404, 422), result.text
        if result.status_code == 200 and "notice_id" in body:
            self.notices.remove(open_notices[0])

    @rule(which=st.integers(0, 50), by_author=st.booleans())
    def erase(self, which: int, by_author: bool) -> None:
        if not self.comments:
            return
        index = which % len(self.comments)
        article, comment_id = self.comments[index]
        token = self.tokens[index] if by_author else ADMIN_TOKEN
        result = self.client.simulate_delete(
            f"{_path(article)}/{comment_id}", headers={"Authorization": f"Bearer {token}"}
        )
        assert result.status_code in (204, 404), result.text

    @rule(which=st.integers(0, 50))
    def erase_mine(self, which: int) -> None:
        if self.tokens:
            token = self.tokens[which % len(self.tokens)]
            result = self.client.simulate_delete(
                "/api/v1/comments/mine", headers={"Authorization": f"Bearer {token}"}
            )
            assert result.status_code == 204

    @rule(article=st.sampled_from(ARTICLES), mode=st.sampled_from(["post", "pre", "first"]))
    def settings(self, article: str, mode: str) -> None:
        result = self.client.simulate_put(
            f"{_path(article)}/settings", json={"mode": mode, "closed": False}, headers=ADMIN
        )
        assert result.status_code == 200

    # -- the properties ------------------------------------------------------------------------

    def _statuses(self) -> dict[str, str]:
        rows = self.client.service.store._run(
            lambda conn: conn.execute("SELECT id, status FROM comments").fetchall()
        )
        return {row[0]: row[1] for row in rows}

    @invariant()
    def readers_see_exactly_the_visible(self) -> None:
        if not hasattr(self, "client"):
            return
        status = self._statuses()
        for article in ARTICLES:
            page = self.client.simulate_get(_path(article), params={"page_size": "100"}).json
            listed = {c["id"] for c in page["items"]}
            expected = {
                cid for a, cid in self.comments if a == article and status[cid] == "visible"
            }
            assert listed == expected
            assert page["total"] == len(expected)
            assert self.client.simulate_get(f"{_path(article)}/count").json["count"] == len(
                expected
            )
            for form in ("get", "post"):
                if form == "get":
                    counts = self.client.simulate_get(
                        "/api/v1/en/comments/counts", params={"article_id": article}
                    ).json
                else:
                    counts = self.client.simulate_post(
                        "/api/v1/en/comments/counts", json={"article_ids": [article]}
                    ).json
                assert counts["counts"][article] == len(expected)
        for article, cid in self.comments:
            got = self.client.simulate_get(f"{_path(article)}/{cid}")
            assert got.status_code == (200 if status[cid] == "visible" else 404)

    @invariant()
    def the_log_holds_every_status_change(self) -> None:
        if not hasattr(self, "client"):
            return
        params = {"limit": "500"}
        if self.log_after is not None:
            params["after"] = str(self.log_after)
        page = self.client.simulate_get(
            "/api/v1/en/moderation/log", params=params, headers=ADMIN
        ).json
        for entry in page["items"]:
            self.log.setdefault(entry["comment_id"], []).append(entry)
        self.log_after = page["next"]
        status = self._statuses()
        for cid, now in status.items():
            entries = self.log.get(cid, [])
            # Replaying the log gives the status in the store...
            assert entries and entries[0]["action"] == "create"
            assert entries[-1]["to"] == now, (cid, entries)
            # ...each entry starting from where the one before ended...
            for before, after in itertools.pairwise(entries):
                assert after["from"] == before["to"], entries
            # ...and every change seen between steps has its entries.
            if cid in self.seen and self.seen[cid] != now:
                assert any(e["from"] == self.seen[cid] for e in entries)
            self.seen[cid] = now


MACHINE_CLIENT: list[Any] = []


def test_random_sequences_keep_readers_and_the_log_right(
    make_client: MakeClient, dsn: str, tmp_path: Path
) -> None:
    engine = "sqlite" if dsn.startswith("sqlite") else "postgres"
    terms = tmp_path / "terms"
    terms.mkdir()
    (terms / "en.banned").write_text("viagra\n")
    (terms / "en.suspect").write_text("idiot\n")
    fresh = itertools.count()

    def new_client() -> Client:
        # A database of its own for each example: a fresh SQLite file, or the same PostgreSQL
        # database emptied.
        client = make_client(
            moderation_terms=terms,
            reports_to_withhold=2,
            report_rate_count=10_000,
            comments_dsn=(
                f"sqlite:///{tmp_path / f'c{next(fresh)}.sqlite3'}" if engine == "sqlite" else dsn
            ),
        )
        if engine == "postgres":
            client.service.store._run(
                lambda conn: conn.execute(
                    "TRUNCATE comments, comment_reports, comment_notices, moderation_log,"
                    " article_comment_settings"
                )
            )
        return client

    MACHINE_CLIENT[:] = [new_client]
    examples = 25 if engine == "sqlite" else 10
    Moderation.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    Moderation.TestCase().runTest()
