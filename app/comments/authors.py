"""Author tokens: a pseudonymous identity without accounts (docs/moderation.md, "Authors").

An author is a random id stored with each of their comments. Their token is that id and an
HMAC-SHA256 of it under the author secret, so the store holds no token nor anything that
turns into one without the secret, a replayed create can hand the same token back, and
checking a token needs no query: the HMAC is recomputed and compared in constant time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from app.comments.model import new_comment_id

_SEPARATOR = "."


class AuthorTokens:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def new_author(self) -> str:
        return new_comment_id()  # 26 characters, time-prefixed, 80 random bits

    def token(self, author_id: str) -> str:
        return f"{author_id}{_SEPARATOR}{self._mac(author_id)}"

    def author_of(self, token: str) -> str | None:
        """The author whose token this is, or None."""
        author_id, separator, mac = token.partition(_SEPARATOR)
        if not separator or len(author_id) != 26 or len(mac) != 43:
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(author_id).encode()):
            return None
        return author_id

    def _mac(self, author_id: str) -> str:
        digest = hmac.new(self._secret, author_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
