"""``POST /api/v1/lineage`` answered by the app itself, ahead of routing and middleware.

Producers send one event per request, so this is the server's hottest request, and what
it needs is small: a token check, the body, the writer. FastAPI's route matching,
dependency solving and middleware stack cost about as much again as all of that (they
ran once per event, for a request whose answer is an empty 201), so :class:`StrataApp`
answers this one path directly over ASGI. The answers are the route's: the same checks
in the same order, the same JSON errors (:mod:`strata.api.errors`), and the FastAPI route
(:func:`strata.api.routes.lineage.post_lineage`) stays as the OpenAPI description.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from strata.api import auth, body, errors
from strata.api.routes.lineage import accept_event
from strata.api.views import json_response
from strata.errors import StrataError

PATH = "/api/v1/lineage"
_CREATED = {"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"0")]}
_EMPTY = {"type": "http.response.body", "body": b""}


class StrataApp(FastAPI):
    """The FastAPI app, but ``POST /api/v1/lineage`` is answered before routing."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == PATH
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            await _post_lineage(self, scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def _post_lineage(app: FastAPI, scope: Scope, receive: Receive, send: Send) -> None:
    try:
        headers = _headers(scope)
        auth.check_header(app.state.settings, "POST", headers.get("authorization", ""))
        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left; nothing was stored
            body.add_chunk(raw, message.get("body", b""))
            if not message.get("more_body", False):
                break
        payload = body.decode_json(bytes(raw), headers.get("content-encoding", "identity"))
        await accept_event(app.state.lineage_writer, payload)
    except StrataError as exc:
        await json_response(exc.to_dict(), exc.http_status)(scope, receive, send)
        return
    except HTTPException as exc:
        await errors.http_error_response(exc)(scope, receive, send)
        return
    except Exception as exc:
        await errors.fault_response("POST", PATH, exc)(scope, receive, send)
        return
    await send(_CREATED)
    await send(_EMPTY)


def _headers(scope: Scope) -> dict[str, str]:
    """The request headers this route reads (names are lower case in ASGI)."""
    out: dict[str, str] = {}
    for name, value in scope["headers"]:
        if name in (b"authorization", b"content-encoding"):
            out[name.decode("latin-1")] = value.decode("latin-1")
    return out
