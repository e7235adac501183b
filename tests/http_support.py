"""What every test against a real server process needs: a free port and one HTTP exchange."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import brotli
import zstandard


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Linux: bind() picks no port, connect() does. A socket bound to a source address then
# draws from the whole (destination-specific) ephemeral range: bind() alone would need a
# port free of TIME_WAIT for every destination, and runs out after ~28,000 fast requests.
_IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)


class _SourcedConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, *, timeout: float, source: str | None) -> None:
        super().__init__(host, port, timeout=timeout)
        self._source = source

    def connect(self) -> None:
        if self._source is None:
            super().connect()
            return
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.IPPROTO_IP, _IP_BIND_ADDRESS_NO_PORT, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.timeout)
            sock.bind((self._source, 0))
            sock.connect((self.host, self.port))
        except BaseException:
            sock.close()
            raise
        self.sock = sock


@dataclass
class Response:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def decoded(self) -> bytes:
        """The body with its Content-Encoding undone by a real decoder."""
        return decode_body(self.headers.get("content-encoding"), self.body)

    def json(self) -> Any:
        # The stdlib parser: orjson reads integers beyond 64 bits as floats, and the API
        # writes `page` exactly however large it is.
        return json.loads(self.decoded(), parse_int=exact_int)


def decode_body(encoding: str | None, data: bytes) -> bytes:
    """Undo a content coding with the reference decoders (each checks its own framing:
    gzip its CRC-32 and length, zstd every frame); trailing garbage is an error."""
    if encoding is None or encoding == "identity":
        return data
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "br":
        return brotli.decompress(data)
    if encoding == "zstd":
        reader = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)
        out = reader.decompress(data)
        assert not reader.unused_data, "bytes after the last zstd frame"
        return out
    raise AssertionError(f"unknown content coding {encoding!r}")


def exact_int(digits: str) -> int:
    """int() of any length: int() alone refuses over 4,300 digits (sys.int_info)."""
    sign, digits = (-1, digits[1:]) if digits.startswith("-") else (1, digits)
    value = 0
    for start in range(0, len(digits), 4000):
        chunk = digits[start : start + 4000]
        value = value * 10 ** len(chunk) + int(chunk)
    return sign * value


def exchange(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    source: str | None = None,
) -> Response:
    """One request on a fresh connection to 127.0.0.1:port, from the loopback address
    `source` when given."""
    conn = _SourcedConnection("127.0.0.1", port, timeout=timeout, source=source)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()
