"""A bearer token refused, and why: apart from the JWT and introspection checks, whose libraries load only when a
policy names an identity provider (joserfc cost a stdio server 0.13 s of CPU at start for nothing)."""

from __future__ import annotations

MAX_TOKEN_CHARS = 16_384


class Refused(Exception):
    """A token this server does not accept: `status` 401 (not a valid token) or 403 (valid, but no role)."""

    def __init__(self, reason: str, status: int = 401) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
