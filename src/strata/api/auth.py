"""Optional bearer tokens: with any configured, reads need a read or write token, writes a
write token. Without tokens the API is open, as Marquez is."""

from __future__ import annotations

import hmac
from typing import Literal

from strata.errors import Forbidden, Unauthorized
from strata.settings import Settings

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Health for load balancers, which carry no token; the server's offer for pages, which ask
# before they hold one.
OPEN_PATHS = frozenset({"/api/v1/health", "/api/v1/strata/server"})

Access = Literal["write", "read", "none"]


def _matches(token: str, allowed: tuple[str, ...]) -> bool:
    # Constant-time compare against each: token checks must not leak through timing.
    return any(hmac.compare_digest(token.encode(), a.encode()) for a in allowed)


def check_header(settings: Settings, method: str, header: str) -> None:
    """Check an ``Authorization`` header for a request of ``method``."""
    if not settings.read_tokens and not settings.write_tokens:
        return
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("this server needs a bearer token: send 'Authorization: Bearer <token>'")
    token = token.strip()
    is_write = _matches(token, settings.write_tokens)
    if method in _READ_METHODS:
        if not (is_write or _matches(token, settings.read_tokens)):
            raise Unauthorized("the bearer token is not valid for this server")
        return
    if not is_write:
        if _matches(token, settings.read_tokens):
            raise Forbidden("this token may only read; writes need a write token")
        raise Unauthorized("the bearer token is not valid for this server")


def access(settings: Settings, header: str) -> Access:
    """What a request with this ``Authorization`` header may do: everything on a server
    without tokens, else what its token allows ("none" without a valid one)."""
    if not settings.read_tokens and not settings.write_tokens:
        return "write"
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return "none"
    if _matches(token, settings.write_tokens):
        return "write"
    return "read" if _matches(token, settings.read_tokens) else "none"
