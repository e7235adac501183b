"""The moderators' side of the comment store (docs/moderation.md): reader reports, notices
of illegal content, the queues, decisions, the log, per-article settings and the
transparency figures. Every status change writes its log entry in the same transaction.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import statistics
import time
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from app.comments.comment_wire import CommentOrder
from app.comments.model import Mod, Moderated, RateLimit, Stored, Unfit, new_comment_id
from app.comments.sql_base import STORED, SQLBase
from app.comments.wire import (
    Action,
    Decision,
    LogEntry,
    NoticeBrief,
    NoticeDecision,
    NoticeFigures,
    NoticeOutcome,
    NoticeReceipt,
    NoticeState,
    Queue,
    Transparency,
)

# At most this many notices are shown beside one comment in a queue (undecided first).
NOTICES_SHOWN = 20
_NOTICE = (
    "id, comment_id, status, received_at, explanation, law, notifier_name, notifier_email,"
    " decided_at, outcome, grounds, decision_explanation"
)
_LOG = (
    "id, at, action, comment_id, article_id, from_status, to_status, reason, note, moderator,"
    " automated, notice_id"
)
# Reports and notices share one rate-limit bucket per client, apart from comments'.
REPORT_BUCKET = "report:"


class ModerationQueries(SQLBase):
    # -- readers: reports and notices ------------------------------------------------------

    def report(
        self,
        language: str,
        article_id: str,
        comment_id: str,
        reason: str,
        text: str | None,
        rate: RateLimit,
        threshold: int,
    ) -> bool:
        """False when the comment is not a visible one of the article (a 404)."""

        def op(conn: Any) -> bool:
            key = self._client_key(rate.client, REPORT_BUCKET)
            with self._write(conn, key):
                found = self._stored_row(conn, language, article_id, comment_id, lock=True)
                if found is None or found.status != "visible":
                    return False
                now = time.time()
                self._check_rate(conn, key, rate, now)
                p = self.param
                repeated = self._exec(
                    conn,
                    f"SELECT 1 FROM comment_reports WHERE comment_id = {p} AND client_key = {p}"
                    " AND NOT cleared",
                    (comment_id, key),
                ).fetchone()
                if repeated is not None:
                    return True  # one client's reports of one comment count once
                at = datetime.fromtimestamp(now, UTC)
                self._exec(
                    conn,
                    "INSERT INTO comment_reports (comment_id, language, client_key, reason,"
                    f" text, at) VALUES ({self._marks(6)})",
                    (comment_id, language, key, reason, text, self._ts_in(at)),
                )
                (clients,) = self._exec(
                    conn,
                    f"SELECT count(*) FROM comment_reports WHERE comment_id = {p} AND NOT cleared",
                    (comment_id,),
                ).fetchone()
                if clients >= threshold:
                    mod = Mod("reports", True, at)
                    self._set_mod(conn, comment_id, "withheld", mod)
                    self._log(conn, found, "reports", "visible", "withheld", at, reason="reports")
                return True

        return self._run(op)

    def notice(
        self,
        language: str,
        article_id: str,
        comment_id: str,
        fields: dict[str, Any],
        rate: RateLimit,
    ) -> NoticeReceipt | None:
        """None when the comment is not one of the article, or is erased (a 404)."""

        def op(conn: Any) -> NoticeReceipt | None:
            key = self._client_key(rate.client, REPORT_BUCKET)
            with self._write(conn, key):
                if self._stored_row(conn, language, article_id, comment_id) is None:
                    return None
                now = time.time()
                self._check_rate(conn, key, rate, now)
                token = secrets.token_urlsafe(32)
                receipt = NoticeReceipt(
                    id=new_comment_id(),
                    comment_id=comment_id,
                    article_id=article_id,
                    language=language,  # type: ignore[arg-type]
                    status="received",
                    received_at=datetime.fromtimestamp(now, UTC),
                    access_token=token,
                )
                self._exec(
                    conn,
                    "INSERT INTO comment_notices (id, comment_id, language, article_id,"
                    " explanation, law, notifier_name, notifier_email, access_digest,"
                    f" received_at) VALUES ({self._marks(10)})",
                    (
                        receipt.id,
                        comment_id,
                        language,
                        article_id,
                        fields["explanation"],
                        fields.get("law"),
                        fields.get("notifier_name"),
                        fields.get("notifier_email"),
                        hashlib.sha256(token.encode()).digest(),
                        self._ts_in(receipt.received_at),
                    ),
                )
                return receipt

        return self._run(op)

    def notice_state(self, notice_id: str, token: str, redress: str) -> NoticeState | None:
        """None unless `token` is the notice's access token (compared as digests)."""

        def op(conn: Any) -> NoticeState | None:
            row = self._exec(
                conn,
                f"SELECT {_NOTICE}, access_digest FROM comment_notices WHERE id = {self.param}",
                (notice_id,),
            ).fetchone()
            given = hashlib.sha256(token.encode()).digest()
            if row is None or not hmac.compare_digest(given, bytes(row[12])):
                return None
            decision = None
            if row[2] == "decided":
                decision = NoticeDecision(
                    outcome=row[9],
                    grounds=row[10],
                    # The moderator's explanation; without one, the grounds are the reasons.
                    explanation=row[11] or row[10],
                    automated=False,
                    redress=redress,
                )
            return NoticeState(
                id=row[0],
                status=row[2],
                received_at=self._ts_out(row[3]),
                decided_at=None if row[8] is None else self._ts_out(row[8]),
                decision=decision,
            )

        return self._run(op)

    # -- moderators -----------------------------------------------------------------------

    def queue(
        self, language: str, queue: Queue, order: CommentOrder, limit: int, offset: int
    ) -> tuple[int, list[Moderated]]:
        p = self.param
        where, params = f"language = {p} AND status = {p}", [language, queue.value]
        if queue is Queue.reported:
            where = (
                f"language = {p} AND status IN ('visible', 'withheld') AND EXISTS (SELECT 1"
                " FROM comment_reports r WHERE r.comment_id = comments.id AND NOT r.cleared)"
            )
            params = [language]
        elif queue is Queue.notices:
            where = (
                f"language = {p} AND status <> 'erased' AND EXISTS (SELECT 1 FROM"
                " comment_notices n WHERE n.comment_id = comments.id AND n.status = 'received')"
            )
            params = [language]

        def op(conn: Any) -> tuple[int, list[Moderated]]:
            total, rows = self._page(conn, STORED, where, tuple(params), order, limit, offset)
            return total, self._moderated(conn, [self._stored(row) for row in rows])

        return self._run(op)

    def moderated(self, language: str, article_id: str, comment_id: str) -> Moderated | None:
        def op(conn: Any) -> Moderated | None:
            found = self._stored_row(conn, language, article_id, comment_id)
            return None if found is None else self._moderated(conn, [found])[0]

        return self._run(op)

    def decide(
        self, language: str, article_id: str, comment_id: str, decision: Decision, moderator: str
    ) -> Moderated | None:
        """None when the comment is not one of the article or is erased (a 404); Unfit when
        the decision does not fit it (a 422)."""

        def op(conn: Any) -> Moderated | None:
            with self._write(conn, None):
                found = self._stored_row(conn, language, article_id, comment_id, lock=True)
                if found is None:
                    return None
                if decision.notice_id is not None:
                    self._open_notice(conn, decision.notice_id, comment_id)
                at = datetime.now(UTC)
                action = decision.action
                reason = None if decision.reason is None else decision.reason.value
                if action in (Action.feature, Action.unfeature):
                    if found.status != "visible":
                        raise Unfit(f"only a visible comment can be {action.value}d")
                    self._exec(
                        conn,
                        f"UPDATE comments SET featured = {p_bool(self, action is Action.feature)}"
                        f" WHERE id = {self.param}",
                        (comment_id,),
                    )
                    status = found.status
                else:
                    status = "visible" if action is Action.approve else "rejected"
                    mod = Mod(reason, False, at, moderator, decision.note, decision.explanation)
                    self._set_mod(conn, comment_id, status, mod)
                    # A decision settles the reports so far: the next ones count afresh.
                    self._exec(
                        conn,
                        f"UPDATE comment_reports SET cleared = {self._true}"
                        f" WHERE comment_id = {self.param} AND NOT cleared",
                        (comment_id,),
                    )
                if decision.notice_id is not None:
                    assert decision.notice_outcome is not None
                    self._exec(
                        conn,
                        f"UPDATE comment_notices SET status = 'decided', decided_at = {self.param},"
                        f" outcome = {self.param}, grounds = {self.param},"
                        f" decision_explanation = {self.param}, moderator = {self.param}"
                        f" WHERE id = {self.param}",
                        (
                            self._ts_in(at),
                            decision.notice_outcome.value,
                            decision.grounds,
                            decision.explanation,
                            moderator,
                            decision.notice_id,
                        ),
                    )
                self._log(
                    conn,
                    found,
                    action.value,
                    found.status,
                    status,
                    at,
                    reason=reason,
                    note=decision.note,
                    moderator=moderator,
                    automated=False,
                    notice_id=decision.notice_id,
                )
                after = self._stored_row(conn, language, article_id, comment_id)
                assert after is not None
                return self._moderated(conn, [after])[0]

        return self._run(op)

    def _open_notice(self, conn: Any, notice_id: str, comment_id: str) -> None:
        row = self._exec(
            conn,
            f"SELECT comment_id, status FROM comment_notices WHERE id = {self.param}",
            (notice_id,),
        ).fetchone()
        if row is None or row[0] != comment_id:
            raise Unfit("`notice_id` is not a notice of this comment")
        if row[1] != "received":
            raise Unfit("this notice is decided already")

    def log_page(self, language: str, after: int | None, limit: int) -> list[LogEntry]:
        def op(conn: Any) -> list[LogEntry]:
            rows = self._exec(
                conn,
                f"SELECT {_LOG} FROM moderation_log WHERE language = {self.param}"
                f" AND id > {self.param} ORDER BY id LIMIT {self.param}",
                (language, after or 0, limit),
            ).fetchall()
            return [
                LogEntry.model_validate(
                    {
                        "id": row[0],
                        "at": self._ts_out(row[1]),
                        "action": row[2],
                        "comment_id": row[3],
                        "article_id": row[4],
                        "from": row[5],
                        "to": row[6],
                        "reason": row[7],
                        "note": row[8],
                        "moderator": row[9],
                        "automated": bool(row[10]),
                        "notice_id": row[11],
                    }
                )
                for row in rows
            ]

        return self._run(op)

    def settings(self, language: str, article_id: str) -> tuple[str | None, bool]:
        return self._run(lambda conn: self._settings(conn, language, article_id))

    def put_settings(self, language: str, article_id: str, mode: str | None, closed: bool) -> None:
        def op(conn: Any) -> None:
            with self._write(conn, None):
                self._exec(
                    conn,
                    "INSERT INTO article_comment_settings (language, article_id, mode, closed)"
                    f" VALUES ({self._marks(4)}) ON CONFLICT (language, article_id)"
                    " DO UPDATE SET mode = excluded.mode, closed = excluded.closed",
                    (language, article_id, mode, closed),
                )

        self._run(op)

    def transparency(
        self,
        languages: list[str],
        start: datetime | None,
        stop: datetime | None,
        bounds: tuple[str | None, str | None],
    ) -> Transparency:
        langs = self._marks(len(languages))
        low = self._ts_in(start or datetime(1970, 1, 1, tzinfo=UTC))
        high = self._ts_in(stop or datetime(9999, 12, 31, tzinfo=UTC))
        p = self.param

        def within(column: str) -> str:
            return f"language IN ({langs}) AND {column} >= {p} AND {column} <= {p}"

        def op(conn: Any) -> Transparency:
            with self._read(conn):
                received, undecided = self._exec(
                    conn,
                    "SELECT count(*), coalesce(sum(CASE WHEN status = 'received' THEN 1"
                    f" ELSE 0 END), 0) FROM comment_notices WHERE {within('received_at')}",
                    (*languages, low, high),
                ).fetchone()
                decided = self._exec(
                    conn,
                    f"SELECT outcome, received_at, decided_at FROM comment_notices"
                    f" WHERE {within('decided_at')}",
                    (*languages, low, high),
                ).fetchall()
                removals = self._exec(
                    conn,
                    "SELECT reason, automated, count(*) FROM moderation_log"
                    f" WHERE {within('at')} AND to_status = 'rejected'"
                    " AND (from_status IS NULL OR from_status <> 'rejected')"
                    " GROUP BY reason, automated",
                    (*languages, low, high),
                ).fetchall()
                reports = self._exec(
                    conn,
                    f"SELECT reason, count(*) FROM comment_reports WHERE {within('at')}"
                    " GROUP BY reason",
                    (*languages, low, high),
                ).fetchall()
            hours = [
                (self._ts_out(row[2]) - self._ts_out(row[1])).total_seconds() / 3600
                for row in decided
            ]
            by_reason: dict[str, int] = defaultdict(int)
            automated = human = 0
            for reason, is_automated, count in removals:
                by_reason[reason or "other"] += int(count)
                if is_automated:
                    automated += int(count)
                else:
                    human += int(count)
            outcomes = [row[0] for row in decided]
            figures = {
                "notices": NoticeFigures(
                    received=int(received),
                    decided_illegal=outcomes.count(NoticeOutcome.illegal.value),
                    decided_not_illegal=outcomes.count(NoticeOutcome.not_illegal.value),
                    undecided=int(undecided),
                    median_hours_to_decision=(
                        round(statistics.median(hours), 3) if hours else None
                    ),
                ),
                "removals": dict(sorted(by_reason.items())),
                "automated_removals": automated,
                "human_removals": human,
                "reports": {row[0]: int(row[1]) for row in sorted(reports)},
            }
            return Transparency.model_validate({"from": bounds[0], "to": bounds[1], **figures})

        return self._run(op)

    # -- helpers ----------------------------------------------------------------------------

    def _moderated(self, conn: Any, found: list[Stored]) -> list[Moderated]:
        """Reports and notices beside each comment, two queries for the whole page."""
        if not found:
            return []
        ids = [s.comment.id for s in found]
        marks = self._marks(len(ids))
        reports: dict[str, dict[str, int]] = defaultdict(dict)
        for comment_id, reason, count in self._exec(
            conn,
            f"SELECT comment_id, reason, count(*) FROM comment_reports"
            f" WHERE comment_id IN ({marks}) AND NOT cleared GROUP BY comment_id, reason",
            tuple(ids),
        ).fetchall():
            reports[comment_id][reason] = int(count)
        notices: dict[str, list[NoticeBrief]] = defaultdict(list)
        for row in self._exec(
            conn,
            f"SELECT {_NOTICE} FROM comment_notices WHERE comment_id IN ({marks})"
            " ORDER BY CASE WHEN status = 'received' THEN 0 ELSE 1 END,"
            " CASE WHEN status = 'received' THEN received_at END, decided_at DESC, id",
            tuple(ids),
        ).fetchall():
            shown = notices[row[1]]
            if len(shown) < NOTICES_SHOWN:
                shown.append(
                    NoticeBrief(
                        id=row[0],
                        status=row[2],
                        received_at=self._ts_out(row[3]),
                        explanation=row[4],
                        law=row[5],
                        notifier_name=row[6],
                        notifier_email=row[7],
                    )
                )
        return [
            Moderated(s, dict(sorted(reports[s.comment.id].items())), notices[s.comment.id])
            for s in found
        ]


def p_bool(store: SQLBase, value: bool) -> str:
    return store._true if value else store._false
