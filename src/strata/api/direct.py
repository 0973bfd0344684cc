"""The requests :class:`StrataApp` answers itself, ahead of FastAPI's routing and middleware.

FastAPI's route matching, dependency solving, middleware stack and thread hand-off cost
a request about 2 ms of CPU on a 2-core machine, as much as or more than the work of the
two busiest requests: ``POST /api/v1/lineage`` (producers send one event per request)
and ``GET …/jobs/{job}/runs`` (the run list every lineage UI and poller reads). Those two
are answered directly over ASGI with the routes' own checks, in the same order, and the
same JSON errors (:mod:`strata.api.errors`). Anything else about such a request (a query
parameter other than ``limit`` and ``offset``, a value the route would refuse, a job
name that is not a job's FQN) goes to the FastAPI route, which stays the one that
answers it and the OpenAPI description of both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.types import Message, Receive, Scope, Send

from strata.api import job_runs, lineage_post

# Answers the request and returns True, or returns False having sent nothing.
Handler = Callable[[FastAPI, Scope, Receive, Send], Awaitable[bool]]


class StrataApp(FastAPI):
    """The FastAPI app, but for the requests of :func:`direct_handler`, and ``HEAD``
    answered wherever ``GET`` is (FastAPI's routes take only the methods they name)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "HEAD":
            scope, send = {**scope, "method": "GET"}, _without_body(send)
        # A browser's request (it names its Origin) goes through the middleware, which
        # judges cross-site requests and adds the headers that let a page read answers.
        if scope["type"] == "http" and not scope.get("root_path") and not _has_origin(scope):
            handler = direct_handler(scope["method"], scope["path"])
            if handler is not None and await handler(self, scope, receive, send):
                return
        await super().__call__(scope, receive, send)


def _has_origin(scope: Scope) -> bool:
    return any(name == b"origin" for name, _ in scope["headers"])


def _without_body(send: Send) -> Send:
    """``send`` for a ``HEAD`` request: the ``GET`` answer's status and headers, no body."""

    async def send_head(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return send_head


def direct_handler(method: str, path: str) -> Handler | None:
    """The handler answering ``method path`` ahead of routing, if any."""
    if method == "POST" and path == lineage_post.PATH:
        return lineage_post.post_lineage
    if method == "GET" and job_runs.matches(path):
        return job_runs.get_job_runs
    return None
