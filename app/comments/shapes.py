"""From stored comments to what each audience is shown (docs/api.md §12): readers the
`Comment`, authors their statement of reasons, moderators the `ModeratedComment`."""

from __future__ import annotations

from app.comments.model import Moderated, Stored
from app.comments.wire import (
    ModeratedComment,
    Moderation,
    ModeratorNote,
    StatementOfReasons,
    Status,
)

# What an author is told when a rule, not a person, held or removed their comment.
RULE_EXPLANATIONS = {
    "banned_term": "Removed automatically: it contains a term the newsroom does not publish.",
    "suspect_term": "Held automatically for a moderator: it contains a term the newsroom"
    " checks before publishing.",
    "link": "Held for a moderator: comments with links are checked before they are published.",
    "first_comment": "Held for a moderator: a first comment is checked before it is published.",
    "premoderation": "Held for a moderator: comments on this article are checked before they"
    " are published.",
    "reports": "Held automatically for a moderator after several readers reported it.",
}


def public_moderation(stored: Stored) -> Moderation | None:
    mod = stored.mod
    if stored.status == "visible" or mod is None:
        return None
    return Moderation(reason=mod.reason, automated=mod.automated, at=mod.at)


def statement_of_reasons(stored: Stored, redress: str) -> StatementOfReasons | None:
    mod = stored.mod
    if stored.status == "visible" or mod is None:
        return None
    explanation = mod.explanation
    if mod.automated and explanation is None:
        explanation = RULE_EXPLANATIONS.get(mod.reason or "")
    return StatementOfReasons(
        reason=mod.reason,
        automated=mod.automated,
        at=mod.at,
        explanation=explanation,
        redress=redress,
    )


def moderated_comment(item: Moderated, article_title: str | None) -> ModeratedComment:
    stored, mod = item.stored, item.stored.mod
    note = None
    if mod is not None:
        note = ModeratorNote(
            reason=mod.reason,
            automated=mod.automated,
            at=mod.at,
            moderator=mod.moderator,
            note=mod.note,
        )
    return ModeratedComment(
        **dict(stored.comment),
        status=Status(stored.status),
        moderation=note,
        reports=item.reports,
        notices=item.notices,
        article_title=article_title,
    )
