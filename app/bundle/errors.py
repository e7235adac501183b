"""What goes wrong reading a bundle: the whole of it (BundleError, the load is refused) or
objects of the served one found damaged on disk (BundleUnavailable, one request fails)."""

from __future__ import annotations


class BundleError(Exception):
    """The bundle cannot be served: missing, corrupt, or of an incompatible format."""


class BundleUnavailable(Exception):
    """A request needs objects of the served bundle that were found damaged on disk: it is
    answered 503 (app.errors) rather than read from a mapping that may fault."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
