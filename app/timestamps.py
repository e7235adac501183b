"""RFC 3339 timestamps in UTC with a `Z` suffix, as every body carries them (docs/api.md §1).

One parser and one formatter for the whole service. Articles keep fractional seconds only
when their source had them; comments always carry microseconds, so their stored text is
fixed-width and sorts by time. The `from`/`to` bounds of list and search are read here too
(`date_bound_us`), with the same grammar.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta

_DATE = r"\d{4}-\d{2}-\d{2}"
_DAY = re.compile(_DATE)
# date, separator, time, fraction, offset
_RFC3339 = re.compile(
    rf"({_DATE})([Tt ])(\d{{2}}:\d{{2}}:\d{{2}})(?:\.(\d+))?([Zz]|[+-]\d{{2}}:\d{{2}})?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_US = 86_400_000_000
_BOUND = "must be a date YYYY-MM-DD or an RFC 3339 timestamp with an offset"


def format_timestamp(value: datetime, *, microseconds: bool = False) -> str:
    """`2026-11-20T08:30:00Z`; with `microseconds` always six fractional digits, otherwise
    only the significant ones (none for a whole second)."""
    value = value.astimezone(UTC)
    # The year by hand: strftime's %Y does not pad years before 1000 on glibc ("999-..."),
    # which RFC 3339 forbids and which would sort after "2026-..." as text (the SQLite store).
    if microseconds:
        return f"{value.year:04d}" + value.strftime("-%m-%dT%H:%M:%S.%fZ")
    base = f"{value.year:04d}" + value.strftime("-%m-%dT%H:%M:%S")
    if value.microsecond:
        base += f".{value.microsecond:06d}".rstrip("0")
    return base + "Z"


def parse_timestamp(text: str) -> datetime:
    """An RFC 3339 timestamp that carries a time-zone offset, as an aware UTC datetime.

    Raises ValueError naming what is wrong (no offset, not RFC 3339, out of range).
    """
    m = _RFC3339.fullmatch(text)
    if not m:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    date, _, time, fraction, offset = m.groups()
    if offset is None:
        raise ValueError(f"timestamp has no time-zone offset: {text!r}")
    iso = f"{date}T{time}"
    if fraction:
        iso += "." + fraction[:6].ljust(6, "0")  # microsecond precision, as datetime holds
    iso += "+00:00" if offset in ("Z", "z") else offset
    try:
        return datetime.fromisoformat(iso).astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # Overflow: year 1 / 9999 shifted out of range
        raise ValueError(f"invalid timestamp {text!r}: {exc}") from None


@functools.lru_cache(maxsize=512)  # each value is checked, then used, several times a request
def date_bound_us(value: str, *, end: bool) -> int:
    """Microseconds since the epoch of a `from` (end=False) or `to` (end=True) value of list
    and search (docs/api.md §7): `YYYY-MM-DD`, or an RFC 3339 timestamp with a `T` and an
    offset. Raises ValueError (the 422's message) for anything else.

    A date alone is its first (from) or last (to) microsecond, UTC. Published times are whole
    microseconds, so finer fractions round inwards: `from` up, `to` down. The instant is not
    converted to UTC first, so a bound just past year 9999 (or before year 1) in UTC holds."""
    if _DAY.fullmatch(value):
        day = datetime.fromisoformat(value).replace(tzinfo=UTC)
        start = (day - _EPOCH) // timedelta(microseconds=1)
        return start + _DAY_US - 1 if end else start
    m = _RFC3339.fullmatch(value)
    if m is None or m[2] == " " or m[5] is None:
        raise ValueError(_BOUND)
    date, t, time, fraction, offset = m.groups()
    fraction = fraction or ""
    instant = datetime.fromisoformat(f"{date}{t}{time}{'+00:00' if offset in 'Zz' else offset}")
    micros = (instant - _EPOCH) // timedelta(microseconds=1)
    micros += int(fraction[:6].ljust(6, "0"))
    if not end and fraction[6:].strip("0"):
        micros += 1
    return micros
