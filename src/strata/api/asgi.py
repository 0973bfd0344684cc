"""Plain ASGI helpers for the requests answered ahead of routing (:mod:`strata.api.direct`)."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from strata.api import errors
from strata.api.views import json_response
from strata.errors import StrataError


def headers(scope: Scope, *names: bytes) -> dict[str, str]:
    """The request headers ``names`` (lower case, as ASGI gives them)."""
    out: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in names:
            out[name.decode("latin-1")] = value.decode("latin-1")
    return out


async def answer_error(
    exc: Exception, method: str, path: str, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer ``exc`` as the app's exception handlers would."""
    if isinstance(exc, StrataError):
        response = json_response(exc.to_dict(), exc.http_status)
    elif isinstance(exc, HTTPException):
        response = errors.http_error_response(exc, scope)
    else:
        response = errors.fault_response(method, path, exc)
    await response(scope, receive, send)
