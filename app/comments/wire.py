"""The wire shapes of moderation, reader reports and notices (docs/api.md §12,
docs/moderation.md): request bodies and queries validated by Pydantic, responses written by
`model_dump_json`. The reader's `Comment` and the create body are in
app/comments/comment_wire.py.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, model_validator

from app.comments.comment_wire import (
    COMMENT_CONTENT_PATTERN,
    CONTENT_MAX,
    Comment,
    CommentOrder,
    comment_cleaner,
    free_text_field,
)
from app.models import CommentTimestamp, DateRange, Language, Page, PageQuery


def _config(**extra: Any) -> ConfigDict:
    # As app.models' response shapes: every field always written is required in the schema.
    config = ConfigDict(
        extra="ignore", json_schema_serialization_defaults_required=True, frozen=True
    )
    config.update(extra)  # type: ignore[typeddict-item]
    return config


class Status(StrEnum):
    """Where a comment stands. Readers see `visible` comments only."""

    visible = "visible"
    pending = "pending"
    withheld = "withheld"
    rejected = "rejected"
    erased = "erased"


class Mode(StrEnum):
    """When a new comment waits for a moderator: `post` never, `links` when it holds a
    link, `first` when its author has no visible comment yet, `pre` always."""

    post = "post"
    links = "links"
    first = "first"
    pre = "pre"


class RejectReason(StrEnum):
    spam = "spam"
    abuse = "abuse"
    off_topic = "off_topic"
    personal_data = "personal_data"
    illegal_content = "illegal_content"
    banned_term = "banned_term"
    other = "other"


class ReportReason(StrEnum):
    spam = "spam"
    abuse = "abuse"
    off_topic = "off_topic"
    personal_data = "personal_data"
    other = "other"


class Action(StrEnum):
    approve = "approve"
    reject = "reject"
    feature = "feature"
    unfeature = "unfeature"


class NoticeOutcome(StrEnum):
    illegal = "illegal"
    not_illegal = "not_illegal"


class Queue(StrEnum):
    pending = "pending"
    withheld = "withheld"
    reported = "reported"
    notices = "notices"
    rejected = "rejected"


# Why a rule (not a moderator) set a status: the `reason` of an automated moderation.
RULE_REASONS = ("banned_term", "suspect_term", "link", "first_comment", "premoderation", "reports")
LOG_ACTIONS = ("create", "edit", "reports", "approve", "reject", "feature", "unfeature", "erase")


def _text(most: int) -> Any:
    """Free text from a moderator, a reader or a notifier: NFC, trimmed, 1 to `most`
    characters, no control characters but newline and tab (the rule of a comment's content)."""
    return free_text_field(most)


def _optional_text(most: int) -> Any:
    return Annotated[StrictStr, comment_cleaner(single_line=False), _text(most)] | None


# -- what readers and authors are answered ------------------------------------------------


class Moderation(BaseModel):
    """Why a comment is not visible: the rule or the decision that put it where it is."""

    model_config = _config()

    reason: str | None
    """A rule's reason (`banned_term`, `suspect_term`, `link`, `first_comment`,
    `premoderation`, `reports`) or a moderator's reason code."""
    automated: bool
    """True when a rule decided, false when a moderator did."""
    at: CommentTimestamp


class StatementOfReasons(Moderation):
    """What the author of a comment that is not visible is told (DSA article 17)."""

    explanation: str | None
    """The moderator's explanation, or the rule's own when a rule decided."""
    redress: str | None
    """How to contest the decision (NEWS_MODERATION_REDRESS)."""


class CreatedComment(Comment):
    """The comment as stored, its status, and the author's secret token."""

    status: Status
    moderation: Moderation | None
    """Null when visible."""
    author_token: str
    """Send as `Authorization: Bearer` to post as the same author, to see, edit or erase
    one's comments, and to export them. Keep it secret: it is shown only to its author."""


class OwnComment(Comment):
    """One's own comment, in any status but `erased`."""

    status: Status
    moderation: StatementOfReasons | None
    """Null when visible."""


class OwnComments(BaseModel):
    model_config = _config()

    items: list[OwnComment]
    """Every comment of the author that is not erased, oldest first."""


# -- moderators ----------------------------------------------------------------------------


class ModeratorNote(Moderation):
    moderator: str | None
    """The moderator's name, null when a rule decided."""
    note: str | None
    """The moderator's internal note."""


class _Notice(BaseModel):
    """What every view of a notice of illegal content starts with: which notice, and where it
    stands. Not a schema of its own: each view's schema lists these fields."""

    model_config = _config()

    id: str
    status: Literal["received", "decided"]
    received_at: CommentTimestamp


class NoticeBrief(_Notice):
    """A notice of illegal content as a moderator sees it in the queue."""

    explanation: str
    law: str | None
    notifier_name: str | None
    notifier_email: str | None


class ModeratedComment(Comment):
    """A comment as a moderator sees it."""

    status: Status
    moderation: ModeratorNote | None
    """The last decision or rule that set its status; null for a comment no rule held."""
    reports: dict[str, int]
    """Reports by reason since the last decision."""
    notices: list[NoticeBrief]
    """Its notices, undecided first, then the newest decided ones (at most 20 in all)."""
    article_title: str | None
    """Null when the article is no longer served."""


class ModerationQueue(Page[ModeratedComment]):
    """A page of a moderation queue."""


class QueueQuery(PageQuery):
    queue: Annotated[
        Queue,
        Field(
            description="`pending`, `withheld`, `reported` (visible or withheld comments with"
            " a report since their last decision), `notices` (an undecided notice) or"
            " `rejected`.",
            examples=["pending"],
        ),
    ] = Queue.pending
    order: Annotated[
        CommentOrder,
        Field(
            description="`oldest` (default) or `newest` first, by `created_at`, then `id`.",
            examples=["newest"],
        ),
    ] = CommentOrder.oldest


class Decision(BaseModel):
    """A moderator's decision on one comment, optionally settling one of its notices."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    action: Action
    reason: RejectReason | None = None
    """Required with `reject`."""
    note: _optional_text(1000) = None  # type: ignore[valid-type]
    explanation: _optional_text(2000) = None  # type: ignore[valid-type]
    """The statement of reasons the author is shown."""
    notice_id: StrictStr | None = Field(default=None, max_length=200)
    notice_outcome: NoticeOutcome | None = None
    grounds: _optional_text(1000) = None  # type: ignore[valid-type]
    """Required with `notice_outcome`: the legal or contractual grounds."""

    @model_validator(mode="after")
    def _fits(self) -> Decision:
        if self.action is Action.reject and self.reason is None:
            raise ValueError("`reject` needs a `reason`")
        if self.action in (Action.feature, Action.unfeature) and self.reason is not None:
            raise ValueError(f"`{self.action}` takes no `reason`")
        if (self.notice_id is None) != (self.notice_outcome is None):
            raise ValueError("`notice_id` and `notice_outcome` go together")
        if self.notice_outcome is not None:
            if self.grounds is None:
                raise ValueError("`notice_outcome` needs `grounds`")
            if self.action in (Action.feature, Action.unfeature):
                raise ValueError("a notice is settled by `approve` or `reject`")
        if self.notice_outcome is NoticeOutcome.illegal and not (
            self.action is Action.reject and self.reason is RejectReason.illegal_content
        ):
            raise ValueError("a notice decided `illegal` needs `reject` with `illegal_content`")
        return self


class LogQuery(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    after: Annotated[
        int | None,
        Field(ge=0, le=2**63 - 1, description="Entries after this id.", examples=[120]),
    ] = None
    limit: Annotated[int, Field(ge=1, le=500, description="Entries, 1 to 500.", examples=[100])] = (
        100
    )


class LogEntry(BaseModel):
    model_config = _config(populate_by_name=True)

    id: int
    at: CommentTimestamp
    action: Literal[LOG_ACTIONS]  # type: ignore[valid-type]
    comment_id: str
    article_id: str
    from_: Status | None = Field(alias="from")
    """The status before; null on `create`."""
    to: Status
    reason: str | None
    note: str | None
    moderator: str | None
    """Null when automated."""
    automated: bool
    notice_id: str | None


class LogPage(BaseModel):
    model_config = _config()

    items: list[LogEntry]
    next: int | None
    """Ask with `after=next` for what follows: the last item's id, else the `after` given."""


class ArticleSettings(BaseModel):
    model_config = _config()

    article_id: str
    language: Language
    mode: Mode | None
    """The article's own mode; null: NEWS_MODERATION_MODE."""
    closed: bool
    """The article's own setting."""
    closes_at: CommentTimestamp | None
    """`published_at` plus NEWS_COMMENTS_CLOSE_AFTER_DAYS; null when that is 0."""


class SettingsUpdate(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    mode: Mode | None = None
    closed: bool = False


class TransparencyQuery(DateRange):
    """`from` and `to` as in the article list (the instants of the notices, decisions and
    reports counted); both ends optional."""


class NoticeFigures(BaseModel):
    model_config = _config()

    received: int
    decided_illegal: int
    decided_not_illegal: int
    undecided: int
    """Of the notices received in the range, those not decided yet."""
    median_hours_to_decision: float | None


class Transparency(BaseModel):
    """The figures of a transparency report over the caller's languages."""

    model_config = _config(populate_by_name=True)

    from_: str | None = Field(alias="from")
    to: str | None
    notices: NoticeFigures
    removals: dict[str, int]
    """Changes to `rejected` by reason."""
    automated_removals: int
    human_removals: int
    reports: dict[str, int]


# -- readers: reports and notices ----------------------------------------------------------


class CommentEdit(BaseModel):
    model_config = ConfigDict(
        extra="ignore", json_schema_extra={"examples": [{"content": "Corrected text."}]}
    )

    content: Annotated[
        StrictStr,
        comment_cleaner(single_line=False),
        Field(
            min_length=1,
            max_length=CONTENT_MAX,
            json_schema_extra={"pattern": COMMENT_CONTENT_PATTERN},
            description=f"1 to {CONTENT_MAX} characters after trimming.",
        ),
    ]


class ReportCreate(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra={"examples": [{"reason": "spam"}]})

    reason: ReportReason
    text: _optional_text(1000) = None  # type: ignore[valid-type]


class ReportReceipt(BaseModel):
    model_config = _config()

    status: Literal["received"]


_EMAIL_RE = re.compile(r"[^@\s]{1,64}@[^@\s.]+(?:\.[^@\s.]+)+")


def _email(value: str) -> str:
    if len(value) > 254 or not _EMAIL_RE.fullmatch(value):
        raise ValueError("not an email address")
    return value


class NoticeCreate(BaseModel):
    model_config = ConfigDict(
        extra="ignore",
        json_schema_extra={
            "examples": [
                {
                    "explanation": "This comment publishes my home address.",
                    "law": "GDPR art. 6",
                    "notifier_name": "A. Reader",
                    "notifier_email": "reader@example.org",
                    "good_faith": True,
                }
            ]
        },
    )

    explanation: Annotated[StrictStr, comment_cleaner(single_line=False), _text(5000)]
    """Why the content is illegal."""
    law: _optional_text(200) = None  # type: ignore[valid-type]
    notifier_name: _optional_text(200) = None  # type: ignore[valid-type]
    notifier_email: (
        Annotated[
            StrictStr,
            AfterValidator(_email),
            Field(max_length=254, json_schema_extra={"format": "email"}),
        ]
        | None
    ) = None
    good_faith: Literal[True]
    """The notifier's statement that the notice is accurate and complete."""


class NoticeReceipt(BaseModel):
    model_config = _config()

    id: str
    comment_id: str
    article_id: str
    language: Language
    status: Literal["received"]
    received_at: CommentTimestamp
    access_token: str
    """Send as `Authorization: Bearer` to `GET /api/v1/notices/{id}`; shown once."""


class NoticeDecision(BaseModel):
    model_config = _config()

    outcome: NoticeOutcome
    grounds: str
    explanation: str
    """The moderator's explanation, or the grounds when they gave none."""
    automated: Literal[False]
    redress: str | None


class NoticeState(_Notice):
    decided_at: CommentTimestamp | None
    decision: NoticeDecision | None
