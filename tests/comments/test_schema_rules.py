"""The OpenAPI document states exactly the rules the server enforces on comment strings:
a body the schema accepts is accepted, and one it refuses is refused (control characters,
trimming, single-line authors, lengths after trimming, NUL in parent_id)."""

from __future__ import annotations

import re
import subprocess
import unicodedata

import orjson
import pydantic
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from app.comments.comment_wire import (
    AUTHOR_MAX,
    CONTENT_MAX,
    IDEMPOTENCY_KEY_MAX,
    CommentCreate,
    CommentCreateHeaders,
)
from app.models import ID_MAX
from app.openapi import openapi_document
from app.routes import ROUTES

SCHEMA = openapi_document(ROUTES)["components"]["schemas"]["CommentCreate"]["properties"]
AUTHOR = re.compile(SCHEMA["author"]["pattern"])
CONTENT = re.compile(SCHEMA["content"]["pattern"])
PARENT = SCHEMA["parent_id"]["anyOf"][0]
(KEY,) = [
    p["schema"]
    for p in openapi_document(ROUTES)["paths"]["/api/v1/{language}/articles/{article_id}/comments"][
        "post"
    ]["parameters"]
    if p["in"] == "header"
]

# Every character trimming or the control rule treats specially, and a few ordinary ones
# (a combining mark, a character outside the BMP, U+FEFF which is not space to Python).
SPECIAL = [chr(c) for c in range(0x00, 0x21)] + [chr(c) for c in range(0x7F, 0xA1)]
SPACES = [c for c in map(chr, range(0x110000)) if c.isspace()]
ORDINARY = ["a", "Z", "é", "\u0301", "한", "\U0001f600", "\ufeff", "\u180e", "-"]
ALPHABET = sorted(set(SPECIAL + SPACES + ORDINARY))


def text(max_size: int) -> st.SearchStrategy[str]:
    pieces = st.one_of(st.sampled_from(ALPHABET), st.just("\r\n"))
    return st.lists(pieces, max_size=max_size).map("".join)


def accepted(**body: object) -> bool:
    try:
        CommentCreate.model_validate_json(orjson.dumps(body))
    except pydantic.ValidationError:
        return False
    return True


def nfc_stable(value: str) -> bool:
    # NFC may lengthen a few characters; the length bound holds after it (documented).
    return unicodedata.normalize("NFC", value) == value


@settings(max_examples=3000, deadline=None)
@given(text(AUTHOR_MAX + 4))
def test_author_pattern_is_the_server_rule(author: str) -> None:
    if nfc_stable(author):
        assert (AUTHOR.fullmatch(author) is not None) == accepted(author=author, content="ok")


@settings(max_examples=1500, deadline=None)
@given(text(40), st.integers(CONTENT_MAX - 3, CONTENT_MAX + 1), text(6))
def test_content_pattern_is_the_server_rule(head: str, fill: int, tail: str) -> None:
    for content in (head, head + "x" * fill + tail):
        if nfc_stable(content):
            expected = accepted(author="A", content=content)
            assert (CONTENT.fullmatch(content) is not None) == expected, repr(content[:80])


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=ID_MAX + 2))
def test_parent_id_rule_is_stated(parent_id: str) -> None:
    """A parent_id the schema allows is looked up (so only a missing comment refuses it);
    one it refuses is refused before any lookup."""
    schema_ok = (
        PARENT["minLength"] <= len(parent_id) <= PARENT["maxLength"]
        and re.fullmatch(PARENT["pattern"], parent_id) is not None
    )
    from app.comments.validation import plausible_id

    assert schema_ok == (accepted(author="A", content="c", parent_id=parent_id) and
                         plausible_id(parent_id))  # fmt: skip


# A header value an HTTP client can send: Latin-1, no CR or LF, no other control byte but
# HTAB (the server refuses those itself), and not starting with space.
SENDABLE = st.text(
    st.sampled_from(["\t", *map(chr, range(0x20, 0x7F)), *map(chr, range(0x80, 0x100))]),
    max_size=IDEMPOTENCY_KEY_MAX + 2,
).filter(lambda v: not v[:1].isspace())


ENDS = st.sampled_from(["", " ", "\t", "\x85", "\xa0 "])


@settings(max_examples=2000, deadline=None)
@given(st.one_of(SENDABLE, st.tuples(SENDABLE, ENDS).map("".join)))
def test_idempotency_key_rule_is_stated(key: str) -> None:
    """Exact for every key of at most maxLength characters as sent. (A longer one whose
    trailing spaces HTTP drops down to maxLength is accepted though the schema refuses it:
    maxLength counts what is sent, and JSON Schema cannot state the rest.)"""
    assume(len(key) <= KEY["maxLength"])
    schema_ok = (
        KEY["minLength"] <= len(key) <= KEY["maxLength"]
        and re.fullmatch(KEY["pattern"], key) is not None
    )
    delivered = key.rstrip(" \t")  # HTTP drops a field value's trailing SP and HTAB
    try:
        CommentCreateHeaders.model_validate({"idempotency-key": delivered})
    except pydantic.ValidationError:
        assert not schema_ok, repr(key)
    else:
        assert schema_ok, repr(key)


def test_patterns_read_the_same_in_ecmascript() -> None:
    """OpenAPI patterns are ECMAScript regexes: node reads them as Python does."""
    samples = ["Mina", " Mina\r\n", "a\tb", "a\rb", "\u2028x", "\x85", "x\ufeff", "\u3000", ""]
    script = (
        "const [a, c, s] = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(s.map(x => [new RegExp(a, 'u').test(x),"
        " new RegExp(c, 'u').test(x)])));"
    )
    arg = orjson.dumps([AUTHOR.pattern, CONTENT.pattern, samples]).decode()
    try:
        out = subprocess.run(
            ["node", "-e", script, arg], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except FileNotFoundError:
        pytest.fail("node is required (make install uses it)")
    expected = [
        [AUTHOR.fullmatch(x) is not None, CONTENT.fullmatch(x) is not None] for x in samples
    ]
    assert orjson.loads(out) == expected
