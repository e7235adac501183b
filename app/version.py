"""The API version: the package's version (pyproject.toml reads it from here) and the
OpenAPI document's ``info.version``. docs/api.md names the sections each version added.

The formats have versions of their own, each beside the code that writes and reads it:
``FORMAT_VERSION`` and ``CONTENT_VERSION`` (app/bundle/format.py), the search index's
``FORMAT_VERSION`` (app/search/layout.py) and ``ANALYZER_VERSION`` (app/search/analyzers.py),
the feeds' ``RENDER_VERSION`` (app/syndication.py), the collection envelope's
``_ENVELOPE_VERSION`` (app/resources/articles.py) and the comment store's migrations
(app/comments/migrations.py).
"""

API_VERSION = "1.2.0"
