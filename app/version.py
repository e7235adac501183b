"""The API version: the package's version (pyproject.toml reads it from here) and the
OpenAPI document's ``info.version``. docs/api.md names the sections each version added.

The formats have versions of their own. Those a bundle depends on (its format and content
versions, the search index format, the analyser, the codec, the feed renderer) are gathered
in one block, and checked in one place, in app/bundle/versions.py; the collection envelope's
``_ENVELOPE_VERSION`` (app/resources/articles.py) and the comment store's migrations
(app/comments/migrations.py).
"""

API_VERSION = "1.3.0"
