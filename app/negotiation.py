"""Accept-Encoding (RFC 9110, 12.5.3): which content coding a response is sent in.

The client's q-values come first. Among the codings it prefers equally the server picks one
that costs nothing to send (stored bytes, joined), then the smallest; a composed page goes
out as identity only when no coding the client accepts is preferred. `None` means nothing is
acceptable: a 406.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.compression import GZIP, IDENTITY

_QVALUE = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)\Z")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+\Z")
_ALIASES = {"x-gzip": GZIP}  # RFC 9110, 8.4.1.3
_OWS = " \t"
# Parsed headers kept per process: clients send a handful of distinct values. Longer values
# are parsed every time, so a hostile client cannot fill the cache with big keys.
_CACHE_LIMIT = 512
_CACHEABLE_CHARS = 256
_cache: dict[str, dict[str, float]] = {}


def parse(header: str) -> dict[str, float]:
    """coding (lower case) -> q, first mention wins; malformed elements are ignored."""
    cached = _cache.get(header)
    if cached is not None:
        return cached
    prefs: dict[str, float] = {}
    for element in header.split(","):
        coding, *params = element.split(";")
        coding = coding.strip(_OWS).lower()
        if not coding or not _TOKEN.match(coding):
            continue
        q: float | None = 1.0
        for param in params:
            name, equals, value = param.partition("=")
            name = name.strip(_OWS).lower()
            if not equals or not _TOKEN.match(name):
                q = None  # not `name=value` (`*;q<2`): the element is malformed
                break
            if name == "q":
                value = value.strip(_OWS)
                q = float(value) if _QVALUE.match(value) else None
        if q is None:
            continue
        prefs.setdefault(_ALIASES.get(coding, coding), q)
    if len(header) <= _CACHEABLE_CHARS:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[header] = prefs
    return prefs


def quality(prefs: dict[str, float], coding: str) -> float:
    if coding in prefs:
        return prefs[coding]
    if "*" in prefs:
        return prefs["*"]
    # Identity is acceptable unless excluded (RFC 9110, 12.5.3), but not preferred: below
    # every q a client can write (0.001), so any coding the client names wins over it.
    return _IMPLICIT_IDENTITY if coding == IDENTITY else 0.0


_IMPLICIT_IDENTITY = 0.0005


@dataclass(frozen=True, slots=True)
class Offer:
    """An encoding a body can be sent in. `cost`: 0 for stored bytes joined; 1 when sending
    computes something (gzip's CRC-32 over a composed page); 2 for identity on a composed
    page (its cost is bandwidth). `size` is asked only to break ties."""

    encoding: str
    cost: int
    size: Callable[[], int]


def choose(header: str | None, offers: Sequence[Offer]) -> str | None:
    """The encoding to send, or None when nothing offered is acceptable (406). `offers`
    includes identity."""
    if header is None:
        return IDENTITY  # no preference stated: send what every client reads
    prefs = parse(header)
    best_q = 0.0
    ranked: list[Offer] = []
    for offer in offers:
        q = quality(prefs, offer.encoding)
        if q <= 0 or q < best_q:
            continue
        if q > best_q:
            best_q, ranked = q, []
        ranked.append(offer)
    if not ranked:
        return None
    cheapest = min(o.cost for o in ranked)
    ranked = [o for o in ranked if o.cost == cheapest]
    if len(ranked) == 1:
        return ranked[0].encoding
    return min(ranked, key=lambda o: (o.size(), o.encoding != IDENTITY, o.encoding)).encoding
