"""``POST /api/v1/lineage`` answered ahead of routing (see :mod:`strata.api.direct`).

What it needs is small: a token check, the body, the writer. The FastAPI route
(:func:`strata.api.routes.lineage.post_lineage`) stays as the OpenAPI description.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from strata.api import auth, body, crosssite
from strata.api.asgi import answer_error, headers
from strata.api.routes.lineage import accept_event

PATH = "/api/v1/lineage"
_CREATED = {"type": "http.response.start", "status": 201, "headers": [(b"content-length", b"0")]}
_EMPTY = {"type": "http.response.body", "body": b""}


async def post_lineage(app: FastAPI, scope: Scope, receive: Receive, send: Send) -> bool:
    try:
        found = headers(scope, b"authorization", b"content-encoding", b"content-length")
        auth.check_header(app.state.settings, "POST", found.get("authorization", ""))
        crosssite.check_write(app.state.settings, scope)
        body.check_length(found.get("content-length"))
        raw = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return True  # the client left; nothing was stored
            body.add_chunk(raw, message.get("body", b""))
            if not message.get("more_body", False):
                break
        payload = body.decode_json(bytes(raw), found.get("content-encoding", "identity"))
        await accept_event(app.state.lineage_writer, payload)
    except Exception as exc:
        await answer_error(exc, "POST", PATH, scope, receive, send)
        return True
    await send(_CREATED)
    await send(_EMPTY)
    return True
