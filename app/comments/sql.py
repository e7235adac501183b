"""The comment store: a comment's life from create to erasure, over SQLite or PostgreSQL.

Everything that decides what a request does (idempotency, the create rules in their order,
the rate limit, the edit window) lives here once, inside one write transaction, so the two
backends behave alike. Readers' queries see `visible` comments only (sql_base.VISIBLE).
The moderators' side is app/comments/moderation_sql.py.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from app.comments.comment_wire import Comment
from app.comments.model import (
    Created,
    IdempotencyConflict,
    Mod,
    NewComment,
    Order,
    ParentNotFound,
    RateLimit,
    Refused,
    Screening,
    Stored,
    StoreUnavailable,
    closed,
    duplicate,
    new_comment_id,
)
from app.comments.moderation_sql import ModerationQueries
from app.comments.sql_base import COLUMNS, STORED, VISIBLE, short_reason

__all__ = ["SQLStore", "short_reason"]

# Rule 2: the same text on the same article from the same author or client within this.
DUPLICATE_WINDOW = timedelta(minutes=10)


class SQLStore(ModerationQueries):
    # -- readers --------------------------------------------------------------------

    def get(self, language: str, article_id: str, comment_id: str) -> Comment | None:
        def op(conn: Any) -> Comment | None:
            return self._visible(conn, language, article_id, comment_id)

        return self._run(op)

    def list_page(
        self, language: str, article_id: str, order: Order, limit: int, offset: int
    ) -> tuple[int, list[Comment]]:
        def op(conn: Any) -> tuple[int, list[Comment]]:
            total, rows = self._page(
                conn, COLUMNS, self._where_visible, (language, article_id), order, limit, offset
            )
            return total, [self._comment(row) for row in rows]

        return self._run(op)

    def count(self, language: str, article_id: str) -> int:
        def op(conn: Any) -> int:
            sql = f"SELECT count(*) FROM comments WHERE {self._where_visible}"
            return int(self._exec(conn, sql, (language, article_id)).fetchone()[0])

        return self._run(op)

    def counts(self, language: str, article_ids: list[str]) -> dict[str, int]:
        unique = sorted(set(article_ids))
        if not unique:
            return {}

        def op(conn: Any) -> dict[str, int]:
            rows = self._exec(
                conn,
                f"SELECT article_id, count(*) FROM comments WHERE language = {self.param}"
                f" AND article_id IN ({self._marks(len(unique))}) AND {VISIBLE}"
                " GROUP BY article_id",
                (language, *unique),
            ).fetchall()
            found = {row[0]: int(row[1]) for row in rows}
            return {article_id: found.get(article_id, 0) for article_id in unique}

        return self._run(op)

    # -- authors ----------------------------------------------------------------------

    def stored(self, language: str, article_id: str, comment_id: str) -> Stored | None:
        """A comment in any status but `erased`."""

        def op(conn: Any) -> Stored | None:
            return self._stored_row(conn, language, article_id, comment_id)

        return self._run(op)

    def mine(self, author_id: str) -> list[Stored]:
        return self._run(lambda conn: self._authors(conn, author_id))

    def _authors(self, conn: Any, author_id: str) -> list[Stored]:
        """Every comment of the author but the erased ones, oldest first."""
        rows = self._exec(
            conn,
            f"SELECT {STORED} FROM comments WHERE author_id = {self.param}"
            " AND status <> 'erased' ORDER BY created_at, id",
            (author_id,),
        ).fetchall()
        return [self._stored(row) for row in rows]

    def erase(
        self,
        language: str,
        article_id: str,
        comment_id: str,
        *,
        author_id: str | None = None,
        moderator: str | None = None,
    ) -> bool:
        """Erase one comment: its author's (`author_id`), or any, by `moderator`."""

        def op(conn: Any) -> bool:
            with self._write(conn, None):
                found = self._stored_row(conn, language, article_id, comment_id, lock=True)
                if found is None or (author_id is not None and found.author_id != author_id):
                    return False
                self._erase(conn, found, moderator)
                return True

        return self._run(op)

    def erase_mine(self, author_id: str) -> int:
        def op(conn: Any) -> int:
            with self._write(conn, None):
                found = self._authors(conn, author_id)
                for stored in found:
                    self._erase(conn, stored, None)
                return len(found)

        return self._run(op)

    def _erase(self, conn: Any, found: Stored, moderator: str | None) -> None:
        now = datetime.now(UTC)
        # The row stays (ids, the log and a reused Idempotency-Key keep working) with
        # nothing left of what the author wrote or of who they were: not even the request
        # fingerprint (a hash of the text) nor the moderator's note and explanation on the
        # row. The moderation log keeps its entries (the audit trail), notes included.
        self._exec(
            conn,
            f"UPDATE comments SET status = 'erased', deleted_at = {self.param}, author = '',"
            f" content = '', author_id = NULL, client_key = NULL, featured = {self._false},"
            " request_hash = '', mod_note = NULL, mod_explanation = NULL"
            f" WHERE id = {self.param}",
            (self._ts_in(now), found.comment.id),
        )
        self._exec(
            conn,
            f"UPDATE comment_reports SET cleared = {self._true} WHERE comment_id = {self.param}",
            (found.comment.id,),
        )
        self._log(
            conn,
            found,
            "erase",
            found.status,
            "erased",
            now,
            moderator=moderator,
            automated=False,
        )

    # -- create and edit --------------------------------------------------------------

    def create(self, new: NewComment, rate: RateLimit) -> Created:
        def op(conn: Any) -> Created:
            client_key = self._client_key(rate.client)
            try:
                with self._write(conn, client_key):
                    if new.idempotency_key is not None:
                        earlier = self._by_key(conn, new)
                        if earlier is not None:
                            return earlier
                    now = time.time()
                    at = datetime.fromtimestamp(now, UTC)
                    # Rules 1 and 2 and the parent in one statement: a write transaction is
                    # held from its first statement, so each one saved shortens it.
                    mode = self._checks(conn, new, client_key, at)
                    self._check_rate(conn, client_key, rate, now)
                    status, mod = self._rules(conn, new.screening, mode, new.author_id, None, at)
                    author_id = new.author_id or new_comment_id()
                    comment = Comment(
                        id=new_comment_id(),
                        article_id=new.article_id,
                        language=new.language,  # type: ignore[arg-type]
                        parent_id=new.parent_id,
                        author=new.author,
                        content=new.content,
                        created_at=at,
                    )
                    self._exec(
                        conn,
                        f"INSERT INTO comments ({COLUMNS[: COLUMNS.index(', featured')]},"
                        " idempotency_key, request_hash, status, author_id, client_key,"
                        " mod_reason, mod_automated, mod_at)"
                        f" VALUES ({self._marks(15)})",
                        (
                            comment.id,
                            comment.article_id,
                            comment.language,
                            comment.parent_id,
                            comment.author,
                            comment.content,
                            self._ts_in(comment.created_at),
                            new.idempotency_key,
                            new.request_hash,
                            status,
                            author_id,
                            client_key,
                            *(
                                (None, None, None)
                                if mod is None
                                else (mod.reason, True, self._ts_in(mod.at))
                            ),
                        ),
                    )
                    stored = Stored(comment, status, mod, author_id)
                    self._sweep(conn, rate, now)
                    self._log(conn, stored, "create", None, status, at, reason=_reason(mod))
                return Created(stored, replayed=False)
            except Exception as error:
                if new.idempotency_key is None or not self._unique_violation(error):
                    raise
            # Another request with the same key committed first (a different client, so
            # not serialised by our lock): answer with its comment.
            earlier = self._by_key(conn, new)
            if earlier is None:
                raise StoreUnavailable("idempotency key vanished during a race")
            return earlier

        return self._run(op)

    def edit(
        self,
        language: str,
        article_id: str,
        comment_id: str,
        author_id: str,
        content: str,
        screening: Screening,
        window_seconds: int,
        rate: RateLimit,
    ) -> Stored | None:
        """The author's edit (docs/moderation.md, "Authors"): None when the comment is not
        theirs; Refused when the window has closed or the comment cannot be edited."""

        def op(conn: Any) -> Stored | None:
            client_key = self._client_key(rate.client)
            with self._write(conn, client_key):
                found = self._stored_row(conn, language, article_id, comment_id, lock=True)
                if found is None or found.author_id != author_id:
                    return None
                if found.status == "rejected":
                    raise Refused(409, "Comment cannot be edited")
                now = time.time()
                at = datetime.fromtimestamp(now, UTC)
                if at - found.comment.created_at > timedelta(seconds=window_seconds):
                    raise Refused(409, "Edit window closed")
                if content != found.comment.content and self._is_duplicate(
                    conn, found.comment, content, author_id, client_key, at
                ):
                    raise duplicate()
                # Edits count against the comment rate limit (each writes a log entry).
                self._check_rate(conn, client_key, rate, now)
                mode = self._settings(conn, language, article_id)[0] or screening.default_mode
                # Rule 6 counts the comment itself: an approved first comment, edited, is
                # still its author's visible comment.
                status, mod = self._rules(conn, screening, mode, author_id, None, at)
                if mod is None:  # no rule applies: it keeps the status it had
                    status, mod = found.status, found.mod
                p = self.param
                self._exec(
                    conn,
                    f"UPDATE comments SET content = {p}, edited_at = {p} WHERE id = {p}",
                    (content, self._ts_in(at), comment_id),
                )
                if status != found.status or mod is not found.mod:
                    self._set_mod(conn, comment_id, status, mod)
                comment = found.comment.model_copy(update={"content": content, "edited_at": at})
                stored = Stored(comment, status, mod, author_id)
                self._log(conn, stored, "edit", found.status, status, at, reason=_reason(mod))
                return stored

        return self._run(op)

    # -- the rules ----------------------------------------------------------------------

    def _checks(self, conn: Any, new: NewComment, client_key: bytes, at: datetime) -> str:
        """Rule 1 (closed: 403), the parent (422) and rule 2 (duplicate: 409), in this order,
        from one statement; returns the article's mode."""
        p = self.param
        article = f"language = {p} AND article_id = {p}"
        mode, closed_flag, parent, repeated = self._exec(
            conn,
            f"SELECT (SELECT mode FROM article_comment_settings WHERE {article}),"
            f" (SELECT closed FROM article_comment_settings WHERE {article}),"
            f" (SELECT 1 FROM comments WHERE id = {p} AND {article} AND {VISIBLE}),"
            f" ({self._duplicate_query})",
            (
                new.language,
                new.article_id,
                new.language,
                new.article_id,
                new.parent_id or "",
                new.language,
                new.article_id,
                *self._duplicate_params(new, new.content, new.author_id, client_key, at),
            ),
        ).fetchone()
        if new.screening.closed_by_age or closed_flag:
            raise closed()
        if new.parent_id is not None and parent is None:
            raise ParentNotFound(new.parent_id)
        if repeated is not None:
            raise duplicate()
        return new.screening.default_mode if mode is None else str(mode)

    @property
    def _duplicate_query(self) -> str:
        p = self.param
        return (
            f"SELECT 1 FROM comments WHERE language = {p} AND article_id = {p}"
            f" AND created_at > {p} AND content = {p} AND id <> {p} AND status <> 'erased'"
            f" AND (author_id = {p} OR client_key = {p}) LIMIT 1"
        )

    def _duplicate_params(
        self,
        target: NewComment | Comment,
        content: str,
        author_id: str | None,
        client_key: bytes,
        at: datetime,
    ) -> tuple[Any, ...]:
        return (
            target.language,
            target.article_id,
            self._ts_in(at - DUPLICATE_WINDOW),
            content,
            target.id if isinstance(target, Comment) else "",
            author_id,
            client_key,
        )

    def _is_duplicate(
        self,
        conn: Any,
        target: NewComment | Comment,
        content: str,
        author_id: str | None,
        client_key: bytes,
        at: datetime,
    ) -> bool:
        """Rule 2: the same text on the article from the same author or client lately."""
        params = self._duplicate_params(target, content, author_id, client_key, at)
        return self._exec(conn, self._duplicate_query, params).fetchone() is not None

    def _rules(
        self,
        conn: Any,
        screening: Screening,
        mode: str,
        author_id: str | None,
        editing: str | None,
        at: datetime,
    ) -> tuple[str, Mod | None]:
        """Rules 3 to 8: the status a new (or edited) text takes, and the rule's record
        (None: rule 8, no rule applies)."""
        if screening.verdict == "banned":
            return "rejected", Mod("banned_term", True, at)
        if screening.verdict == "suspect":
            return "withheld", Mod("suspect_term", True, at)
        if mode == "links" and screening.has_link:
            return "pending", Mod("link", True, at)
        if mode == "first" and not self._has_visible(conn, author_id, editing):
            return "pending", Mod("first_comment", True, at)
        if mode == "pre":
            return "pending", Mod("premoderation", True, at)
        return "visible", None

    def _has_visible(self, conn: Any, author_id: str | None, other_than: str | None) -> bool:
        if author_id is None:  # a new author
            return False
        row = self._exec(
            conn,
            f"SELECT 1 FROM comments WHERE author_id = {self.param} AND {VISIBLE}"
            f" AND id <> {self.param} LIMIT 1",
            (author_id, other_than or ""),
        ).fetchone()
        return row is not None

    # -- helpers --------------------------------------------------------------------------

    def _visible(
        self, conn: Any, language: str, article_id: str, comment_id: str
    ) -> Comment | None:
        row = self._exec(
            conn,
            f"SELECT {COLUMNS} FROM comments WHERE id = {self.param} AND {self._where_visible}",
            (comment_id, language, article_id),
        ).fetchone()
        return None if row is None else self._comment(row)

    def _by_key(self, conn: Any, new: NewComment) -> Created | None:
        row = self._exec(
            conn,
            f"SELECT {STORED}, request_hash FROM comments"
            f" WHERE language = {self.param} AND article_id = {self.param}"
            f" AND idempotency_key = {self.param}",
            (new.language, new.article_id, new.idempotency_key),
        ).fetchone()
        if row is None:
            return None
        stored = self._stored(row[:17])
        if stored.status == "erased":
            raise IdempotencyConflict("The comment created with this Idempotency-Key was deleted")
        if row[17] != new.request_hash or (
            new.author_id is not None and new.author_id != stored.author_id
        ):
            raise IdempotencyConflict(
                "Idempotency-Key was already used for a different comment on this article"
            )
        return Created(stored, replayed=True)


def _reason(mod: Mod | None) -> str | None:
    return None if mod is None else mod.reason
