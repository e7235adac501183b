"""Every public shape on the wire but the comments', declared once with Pydantic (docs/api.md;
choice: docs/models.md), one module per area:

- `common`: the wire configuration, timestamps, languages, the page envelope, paging and
  date-range parameters;
- `articles`: the source record, the Article and its summary, provenance, corrections,
  retractions, the list queries;
- `search`: search parameters, results, facets, highlights;
- `syndication`: feed parameters and the change feed;
- `errors`: the error bodies;
- `ops`: health, readiness, the OpenAPI document.

The comments' shapes live with the comments (app/comments/comment_wire.py for readers and
authors, app/comments/wire.py for moderation).

From these classes come: the builder's validation and serialisation of articles
(app/builder/records.py, app/builder/compile.py), request validation and its 422 items
(app/params.py, app/comments/validation.py), and the components of /openapi.json
(app/openapi.py). A new field is one line in its area's module plus its test. Every public
name is importable from `app.models` itself.

Field order is the order keys appear in response bodies.
"""

from __future__ import annotations

from app.models.articles import (
    AI_SOURCE_TYPES,
    CATEGORY_DOC,
    DEFAULT_PROVENANCE,
    DIGITAL_SOURCE_TYPE_URI,
    LIMIT_DEFAULT,
    LIMIT_MAX,
    NOTE_MAX,
    RESERVED_IDS,
    RETRACTED_EXAMPLE,
    SOURCE_URL_MAX,
    SOURCES_MAX,
    Article,
    ArticleId,
    ArticleList,
    ArticleListQuery,
    ArticleSummary,
    Correction,
    CorrectionEntry,
    CorrectionList,
    LatestQuery,
    ListOrder,
    Note,
    Provenance,
    RetractedArticle,
    Retraction,
    Review,
    SourceArticle,
    SourceProvenance,
    SourceType,
    SourceUrl,
    StoryId,
    Text,
)
from app.models.common import (
    ID_MAX,
    MAX_INT_DIGITS,
    PAGE_SIZE_DEFAULT,
    PAGE_SIZE_MAX,
    Base10,
    CommentTimestamp,
    DateRange,
    Fields,
    FilterQuery,
    Language,
    Page,
    PageNumber,
    PageQuery,
    PageSize,
    Timestamp,
    query_int,
    wire_config,
)
from app.models.errors import (
    Error,
    ValidationError,
    ValidationErrorItem,
)
from app.models.ops import (
    Health,
    OpenAPIDocument,
    Ready,
)
from app.models.search import (
    QUERY_MAX_CHARS,
    Highlight,
    SearchFacets,
    SearchOrder,
    SearchQuery,
    SearchResults,
)
from app.models.syndication import (
    CHANGES_LIMIT_DEFAULT,
    CHANGES_LIMIT_MAX,
    Change,
    ChangeList,
    ChangesQuery,
    FeedQuery,
)

__all__ = [
    "AI_SOURCE_TYPES",
    "CATEGORY_DOC",
    "CHANGES_LIMIT_DEFAULT",
    "CHANGES_LIMIT_MAX",
    "DEFAULT_PROVENANCE",
    "DIGITAL_SOURCE_TYPE_URI",
    "ID_MAX",
    "LIMIT_DEFAULT",
    "LIMIT_MAX",
    "MAX_INT_DIGITS",
    "NOTE_MAX",
    "PAGE_SIZE_DEFAULT",
    "PAGE_SIZE_MAX",
    "QUERY_MAX_CHARS",
    "RESERVED_IDS",
    "RETRACTED_EXAMPLE",
    "SOURCES_MAX",
    "SOURCE_URL_MAX",
    "Article",
    "ArticleId",
    "ArticleList",
    "ArticleListQuery",
    "ArticleSummary",
    "Base10",
    "Change",
    "ChangeList",
    "ChangesQuery",
    "CommentTimestamp",
    "Correction",
    "CorrectionEntry",
    "CorrectionList",
    "DateRange",
    "Error",
    "FeedQuery",
    "Fields",
    "FilterQuery",
    "Health",
    "Highlight",
    "Language",
    "LatestQuery",
    "ListOrder",
    "Note",
    "OpenAPIDocument",
    "Page",
    "PageNumber",
    "PageQuery",
    "PageSize",
    "Provenance",
    "Ready",
    "RetractedArticle",
    "Retraction",
    "Review",
    "SearchFacets",
    "SearchOrder",
    "SearchQuery",
    "SearchResults",
    "SourceArticle",
    "SourceProvenance",
    "SourceType",
    "SourceUrl",
    "StoryId",
    "Text",
    "Timestamp",
    "ValidationError",
    "ValidationErrorItem",
    "query_int",
    "wire_config",
]
