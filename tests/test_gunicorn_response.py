"""app/gunicorn_worker.py's OneWriteResponse: the head leaves in the same write as the body,
so a worker killed mid-answer never leaves the proxy holding a head without its body."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gunicorn.http import wsgi

from app.gunicorn_worker import OneWriteResponse


class RecordingSocket:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


def respond(
    response_class: type[wsgi.Response], method: str, status: str, body: list[bytes], **kw: Any
) -> list[bytes]:
    sock = RecordingSocket()
    req = SimpleNamespace(version=(1, 1), method=method, should_close=lambda: False)
    cfg = SimpleNamespace(is_ssl=False, sendfile=False)
    resp = response_class(req, sock, cfg)
    length = sum(map(len, body))
    headers = [("Content-Type", "application/json")]
    if not kw.get("chunked"):
        headers.append(("Content-Length", str(length)))
    resp.start_response(status, headers)
    for item in body:
        resp.write(item)
    resp.close()
    return sock.writes


def test_gunicorns_own_response_writes_head_and_body_apart() -> None:
    # The problem this class exists for; if gunicorn changes this, the class can go.
    assert len(respond(wsgi.Response, "GET", "200 OK", [b'{"a":1}'])) == 2


def test_head_and_body_in_one_write() -> None:
    writes = respond(OneWriteResponse, "GET", "200 OK", [b'{"a":1}'])
    assert len(writes) == 1
    head, _, body = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 7" in head
    assert body == b'{"a":1}'


def test_answers_without_a_body_still_send_their_head() -> None:
    for method, status in (
        ("HEAD", "200 OK"),
        ("GET", "304 Not Modified"),
        ("GET", "204 No Content"),
    ):
        writes = respond(OneWriteResponse, method, status, [])
        assert len(writes) == 1 and writes[0].endswith(b"\r\n\r\n"), (method, status)


def test_same_bytes_as_gunicorn_apart_from_the_date() -> None:
    ours = b"".join(respond(OneWriteResponse, "GET", "404 Not Found", [b"ab", b"cd"]))
    theirs = b"".join(respond(wsgi.Response, "GET", "404 Not Found", [b"ab", b"cd"]))

    def without_date(raw: bytes) -> bytes:
        return b"\r\n".join(line for line in raw.split(b"\r\n") if not line.startswith(b"Date:"))

    assert without_date(ours) == without_date(theirs)
