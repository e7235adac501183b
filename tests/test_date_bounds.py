"""The `from`/`to` grammar of list and search (docs/api.md §7): `YYYY-MM-DD` or an RFC 3339
timestamp with an offset and a `T`, parsed by app.timestamps, the service's one RFC 3339
parser.

`_previous` is the parser the models module had before app.timestamps took the grammar over,
kept as the oracle: over generated inputs, the shared parser must accept the same values with
the same microseconds and refuse the same values with the same message (the text of the 422).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.timestamps import date_bound_us

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_INSTANT = re.compile(r"(\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _previous(value: str, *, end: bool) -> int:
    if _DATE.fullmatch(value):
        day = datetime.fromisoformat(value).replace(tzinfo=UTC)
        start = (day - _EPOCH) // timedelta(microseconds=1)
        return start + 86_400_000_000 - 1 if end else start
    match = _INSTANT.fullmatch(value)
    if match is None:
        raise ValueError("must be a date YYYY-MM-DD or an RFC 3339 timestamp with an offset")
    head, fraction, offset = match.groups()
    fraction = fraction or ""
    instant = datetime.fromisoformat(f"{head}{'+00:00' if offset in 'Zz' else offset}")
    micros = (instant - _EPOCH) // timedelta(microseconds=1)
    micros += int(fraction[:6].ljust(6, "0"))
    if not end and fraction[6:].strip("0"):
        micros += 1
    return micros


def _outcome(parse: object, value: str, end: bool) -> tuple[str, object]:
    assert callable(parse)
    try:
        return "accepted", parse(value, end=end)
    except ValueError as exc:  # what becomes the 422's message
        return "refused", str(exc)


def _digits(n: int) -> st.SearchStrategy[str]:
    # Mostly ASCII, sometimes another script's digits (`\d` matches them, fromisoformat not).
    return st.text(st.sampled_from("0123456789" * 20 + "٣۵९"), min_size=n, max_size=n)


def _part(common: list[str], n: int) -> st.SearchStrategy[str]:
    """One of the `common` values seven times in eight, else any `n` digits."""
    return st.one_of(*[st.sampled_from(common)] * 7, _digits(n))


_NEAR_VALID = st.builds(
    lambda y, mo, d, sep, h, mi, s, frac, off: f"{y}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}{off}",
    _part(["2026", "0001", "9999", "1970", "0000"], 4),
    _part(["01", "02", "12", "11", "13", "00"], 2),
    _part(["01", "28", "29", "30", "31", "20", "32"], 2),
    st.sampled_from(["T", "T", "T", "t", " ", "_", "", "TT"]),
    _part(["00", "08", "12", "23", "24"], 2),
    _part(["00", "30", "59", "60"], 2),
    _part(["00", "01", "59", "60"], 2),
    st.sampled_from(["", ".", ".0", ".5", ".000000", ".0000001", ".1234567", ".999999999"])
    | _digits(9).map(lambda d: "." + d),
    st.sampled_from(
        ["Z", "z", "+00:00", "-00:00", "+09:00", "-23:59", "+24:00", "", "+0900", "+09", "UTC"]
    ),
)
_DATES = st.builds(
    lambda y, mo, d: f"{y}-{mo}-{d}",
    _part(["2026", "0001", "9999", "0000"], 4),
    _part(["01", "02", "12", "13", "00"], 2),
    _part(["01", "29", "30", "31", "32"], 2),
)


def _mutated(base: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """A value with one character dropped, doubled or replaced."""

    def mutate(value: str, at: int, how: int, char: str) -> str:
        if not value:
            return char
        i = at % len(value)
        return [
            value[:i] + value[i + 1 :],
            value[: i + 1] + value[i:],
            value[:i] + char + value[i + 1 :],
        ][how]

    return st.builds(mutate, base, st.integers(0, 40), st.integers(0, 2), st.characters())


def _offset(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


# Valid bounds over the whole range: any instant, fraction length and offset.
_VALID = st.builds(
    lambda t, frac, off: f"{t:%Y}".zfill(4) + f"-{t:%m-%dT%H:%M:%S}{frac}{off}",
    st.datetimes(),
    st.text(st.sampled_from("0123456789"), max_size=12).map(lambda d: d and "." + d),
    st.sampled_from(["Z", "z"]) | st.integers(-1439, 1439).map(_offset),
) | st.dates().map(lambda d: f"{d.year:04d}-{d:%m-%d}")
_VALUES = (
    _VALID | _NEAR_VALID | _DATES | _mutated(_VALID | _NEAR_VALID | _DATES) | st.text(max_size=40)
)


@settings(max_examples=3000, deadline=None)
@given(_VALUES, st.booleans())
@example("2026-11-20T08:30:00+09:00", False)
@example("2026-11-20 08:30:00+09:00", False)  # RFC 3339 allows the space; the contract not
@example("2026-11-20T08:30:00", True)  # no offset
@example("2026-11-20T08:30:00.1234567Z", False)  # beyond microseconds: `from` rounds up
@example("2026-11-20T08:30:00.1234567Z", True)  # `to` down
@example("9999-12-31T23:59:59-01:00", True)  # past year 9999 in UTC, yet a bound
@example("0001-01-01T00:00:00+01:00", False)
@example("2026-02-30", False)
@example("2026-11-20T08:30:00.٣Z", False)
@example("2026-1٣-20t08:30:00Z", False)  # fromisoformat's message quotes the value
def test_the_shared_parser_answers_as_the_previous_one(value: str, end: bool) -> None:
    assert _outcome(date_bound_us, value, end) == _outcome(_previous, value, end)


@pytest.mark.parametrize(
    ("value", "end", "micros"),
    [
        ("1970-01-01", False, 0),
        ("1970-01-01", True, 86_400_000_000 - 1),
        ("1970-01-01T00:00:00.0000001Z", False, 1),
        ("1970-01-01T00:00:00.0000009Z", True, 0),
        ("1970-01-01T09:00:00+09:00", False, 0),
        ("1970-01-01t00:00:01.5z", True, 1_500_000),
    ],
)
def test_bounds(value: str, end: bool, micros: int) -> None:
    assert date_bound_us(value, end=end) == micros


@pytest.mark.parametrize(
    "value", ["2026-11-20 08:30:00Z", "2026-11-20T08:30:00", "2026-11-20T08:30Z", "20261120", ""]
)
def test_refused(value: str) -> None:
    with pytest.raises(ValueError, match="must be a date YYYY-MM-DD or an RFC 3339 timestamp"):
        date_bound_us(value, end=False)
