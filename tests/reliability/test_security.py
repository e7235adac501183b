"""Security basics: nosniff on every response, no internals in error bodies, the admin
token never logged, body limits enforced before the body is read."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import quote

import falcon
import falcon.testing
import orjson
import pytest

from app.config import Settings
from app.wsgi import create_app
from tests.reliability.harness import ADMIN_TOKEN, Server, parse_response, sample_article_ids


def _comments(article_id: str) -> str:
    return f"/api/v1/en/articles/{quote(article_id, safe='')}/comments"


@pytest.mark.e2e
def test_nosniff_on_every_kind_of_response(server: Server) -> None:
    article = sample_article_ids(server.bundle_dir)[0]
    created = server.post_comment("en", article, "nosniff")
    comment = f"{_comments(article)}/{created.json()['id']}"
    etag = server.request("GET", "/api/v1/en/categories").headers["etag"]
    bearer = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    replies = {
        "201": created,
        "200": server.request("GET", "/api/v1/en/articles"),
        "HEAD": server.request("HEAD", "/api/v1/en/articles/latest"),
        "304": server.request("GET", "/api/v1/en/categories", headers={"If-None-Match": etag}),
        "400": server.request("GET", "/api/v1/xx/articles"),
        "401": server.request("DELETE", comment),
        "404": server.request("GET", "/nowhere"),
        "405": server.request("PUT", "/api/v1/en/articles"),
        "415": server.request("POST", _comments(article), b"{}", {"Content-Type": "text/plain"}),
        "422": server.request("GET", "/api/v1/en/articles?page=0"),
        "204": server.request("DELETE", comment, headers=bearer),
        "gunicorn 400": parse_response(server.raw(b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n")),
        "gunicorn 414": parse_response(server.raw(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n")),
    }
    for name, reply in replies.items():
        assert reply.headers.get("x-content-type-options") == "nosniff", (name, reply.headers)
    assert [replies[k].status for k in ("304", "204", "gunicorn 400", "gunicorn 414")] == [
        304,
        204,
        400,
        414,
    ]


def test_unexpected_exception_is_a_plain_json_500(sample_bundle: Path, tmp_path: Path) -> None:
    """An uncaught error says nothing about the code: no trace, no path, no message."""

    class Boom:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            raise RuntimeError(f"secret detail in {__file__}")

    settings = Settings(bundle_dir=sample_bundle, comments_dsn=f"sqlite:///{tmp_path}/c.db")
    app = create_app(settings)
    app.add_route("/boom", Boom())
    result = falcon.testing.TestClient(app).simulate_get("/boom")
    assert result.status_code == 500
    assert result.json == {"detail": "Internal Server Error"}
    assert result.headers["x-content-type-options"] == "nosniff"


@pytest.mark.e2e
def test_admin_token_never_logged(sample_bundle: Path, tmp_path: Path) -> None:
    wrong = "wrong-token-5e0d77aa31"
    # Debug level and the access log on: the most a misconfigured operator could log.
    env = {"NEWS_LOG_LEVEL": "debug"}
    with Server(tmp_path / "srv", sample_bundle, env=env) as srv:
        article = sample_article_ids(sample_bundle)[0]
        target = _comments(article)
        ids = [srv.post_comment("en", article, f"to delete {i}").json()["id"] for i in range(2)]
        for token in (wrong, f"{ADMIN_TOKEN}x", ADMIN_TOKEN[:-1]):
            reply = srv.request(
                "DELETE", f"{target}/{ids[0]}", headers={"Authorization": f"Bearer {token}"}
            )
            assert reply.status == 401
            assert token not in reply.body.decode()
        for comment_id in ids:
            reply = srv.request(
                "DELETE",
                f"{target}/{comment_id}",
                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            )
            assert reply.status == 204
        # Malformed requests make gunicorn log a warning about the header: not its value.
        srv.raw(
            f"DELETE {target}/x HTTP/1.1\r\nAuthorization: Bearer {ADMIN_TOKEN}\rx\r\n\r\n".encode()
        )
        srv.raw(
            f"DELETE {target}/x HTTP/1.1\r\nAuthorization : Bearer {ADMIN_TOKEN}\r\n\r\n".encode()
        )
        srv.raw(f"DELETE {target}/x HTTP/1.1\r\nAuthorization: Bearer {wrong}\x00\r\n\r\n".encode())
    log = srv.log_text()
    assert "DELETE" in log  # the access log did record the requests
    assert ADMIN_TOKEN not in log
    assert ADMIN_TOKEN[:-1] not in log
    assert wrong not in log


@pytest.mark.e2e
@pytest.mark.parametrize("language", ["en", "xx"])
def test_body_limit_enforced_before_the_body_is_read(server: Server, language: str) -> None:
    """A 100 MB Content-Length with no body sent: answered at once (413, or the language's
    400 which comes first), and the connection is closed rather than drained."""
    article = sample_article_ids(server.bundle_dir)[0]
    path = f"/api/v1/{language}/articles/{quote(article, safe='')}/comments"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 100000000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(head + b'{"author": "a", ')
        data = b""
        while chunk := sock.recv(65536):  # returns b"" only when the server closes
            data += chunk
        elapsed = time.monotonic() - started
    reply = parse_response(data)
    assert reply.status == (413 if language == "en" else 400)
    assert "detail" in orjson.loads(reply.body)
    assert elapsed < 2.0
