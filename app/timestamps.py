"""RFC 3339 timestamps in UTC with a `Z` suffix, as every body carries them (docs/api.md §1).

One parser and one formatter for the whole service. Articles keep fractional seconds only
when their source had them; comments always carry microseconds, so their stored text is
fixed-width and sorts by time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?"
)


def format_timestamp(value: datetime, *, microseconds: bool = False) -> str:
    """`2026-11-20T08:30:00Z`; with `microseconds` always six fractional digits, otherwise
    only the significant ones (none for a whole second)."""
    value = value.astimezone(UTC)
    if microseconds:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    base = value.strftime("%Y-%m-%dT%H:%M:%S")
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
    date, time, fraction, offset = m.groups()
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
