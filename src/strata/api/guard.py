"""Who may send a body, and how large, decided before any of it is read.

FastAPI reads and parses a route's body before it solves the route's dependencies, so a
token checked by a dependency is checked after the whole body is in memory: a caller with
no token could make the server read gigabytes. This middleware checks the token from the
headers alone, refuses a declared ``Content-Length`` past :data:`~strata.api.body.MAX_BODY`
at once, and counts what a route reads of a body sent in chunks, refusing it (413) the
moment it passes the limit.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata.api import auth, body
from strata.api.asgi import answer_error, headers


class GuardMiddleware:
    """Token and body-size checks for every ``/api/`` request, ahead of its route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.startswith("/api/") or path in auth.OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        found = headers(scope, b"authorization", b"content-length")
        try:
            settings = scope["app"].state.settings
            auth.check_header(settings, scope["method"], found.get("authorization", ""))
            body.check_length(found.get("content-length"))
        except Exception as exc:
            await answer_error(exc, scope["method"], path, scope, receive, send)
            return
        await self.app(scope, _capped(receive), send)


def _capped(receive: Receive) -> Receive:
    """``receive`` refusing (413) a body once more than ``MAX_BODY`` bytes came in."""
    seen = 0

    async def receive_capped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > body.MAX_BODY:
                raise HTTPException(413, f"request body is larger than {body.MAX_BODY} bytes")
        return message

    return receive_capped
