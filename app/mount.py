"""From the route table (app/routes.py) to Falcon: each route's resource made once, and
what its declaration asks of every request applied around its responders.

The checks run before the responder, in the documented order of every operation:
`Cache-Control: no-store` for a "no-store" route (first, so that its errors carry it too),
then the language of a `{language}` path (400). Which of them a responder needs is decided
here, once: a responder that needs neither is mounted as it is, and a request pays only for
the checks of its own route. Tokens (authors, moderators, notifiers) are the resources'
first step (app/comments/auth.py), right after these. The route's keep rule goes to the
response cache (`App.keep_answers`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import falcon

from app.errors import unsupported_language
from app.languages import LANGUAGE_SET
from app.resources.articles import BundleResource
from app.response_cache import App
from app.routes import ROUTES, Route, Shared

Responder = Callable[..., None]


def _no_store(responder: Responder) -> Responder:
    def no_store(req: falcon.Request, resp: falcon.Response, *fields: str, **params: str) -> None:
        resp.set_header("Cache-Control", "no-store")
        responder(req, resp, *fields, **params)

    return no_store


def _language(responder: Responder, fields: tuple[str, ...]) -> Responder:
    """The language check before `responder`, whose path has these `fields`.

    Falcon passes path fields by keyword; the article routes' wrappers hand them on by
    position, so that the check costs what it cost inside each responder (no second dict
    of keywords: measured per request, the same as the check it replaces)."""
    if fields == ("language",):

        def language_checked(req: falcon.Request, resp: falcon.Response, language: str) -> None:
            if language not in LANGUAGE_SET:
                raise unsupported_language(language)
            responder(req, resp, language)

        return language_checked
    if fields == ("language", "article_id"):

        def article_language_checked(
            req: falcon.Request, resp: falcon.Response, language: str, article_id: str
        ) -> None:
            if language not in LANGUAGE_SET:
                raise unsupported_language(language)
            responder(req, resp, language, article_id)

        return article_language_checked

    def any_language_checked(req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        if params["language"] not in LANGUAGE_SET:
            raise unsupported_language(params["language"])
        responder(req, resp, **params)

    return any_language_checked


def _responder_names(method: str) -> tuple[str, ...]:
    """A GET also answers HEAD with the same responder (mount gives every resource with an
    `on_get` its `on_head`; app.delivery.send writes no body for a HEAD)."""
    return ("on_get", "on_head") if method == "get" else (f"on_{method}",)


def _check_declared(route: Route, resource: object) -> None:
    """The resource answers exactly the declared methods, and a "public" route's resource
    sends through app.delivery.send (what gives it ETag, 304 and Cache-Control)."""
    if route.cache == "public" and not isinstance(resource, BundleResource):
        raise RuntimeError(f"{route.path}: a public route needs a BundleResource")
    if not route.documented:
        return
    declared = {name for op in route.operations for name in _responder_names(op.method)}
    present = {name for name in dir(resource) if name.startswith("on_")}
    if declared != present:
        raise RuntimeError(f"{route.path}: declared {sorted(declared)}, has {sorted(present)}")


def mount(app: falcon.App, shared: Shared, routes: Iterable[Route] = ROUTES) -> None:
    """Make each route's resource from `shared` and add it to `app`, its responders wrapped
    in the checks its declaration asks for."""
    for route in routes:
        resource = route.make(shared)
        if hasattr(resource, "on_get") and not hasattr(resource, "on_head"):
            resource.on_head = resource.on_get  # type: ignore[attr-defined]
        _check_declared(route, resource)
        if route.cache == "public":
            assert isinstance(resource, BundleResource)
            resource.cache = shared.cache
        fields = tuple(re.findall(r"\{(\w+)\}", route.path))
        language = "language" in fields
        no_store = route.cache == "no-store"
        for name in (name for name in dir(resource) if name.startswith("on_")):
            if not (language or no_store):
                continue  # mounted as it is
            responder: Responder = getattr(resource, name)
            if language:
                responder = _language(responder, fields)
            if no_store:
                responder = _no_store(responder)
            setattr(resource, name, responder)  # Falcon takes the instance's responders
        # A literal segment beats a field in Falcon's router: "count" is never an id.
        app.add_route(route.path, resource)
        if isinstance(app, App):
            app.keep_answers(resource, route.keeps)
