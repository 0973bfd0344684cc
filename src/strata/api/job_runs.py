"""``GET /api/v1/namespaces/{namespace}/jobs/{job}/runs`` answered ahead of routing (see
:mod:`strata.api.direct`): the run list of a job named by its FQN, the usual request.

The FastAPI route (:func:`strata.api.routes.jobs.list_runs`) answers everything else: a
name to redirect or not found, query parameters to refuse or other than ``limit`` and
``offset``.
"""

from __future__ import annotations

from urllib.parse import unquote

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.types import Receive, Scope, Send

from strata.api import auth, views
from strata.api.asgi import answer_error, headers
from strata.api.deps import MAX_LIMIT, read_connection
from strata.api.inputs import is_name
from strata.lineage.query import common
from strata.lineage.query import runs as run_reads

_PREFIX = "/api/v1/namespaces/"


def matches(path: str) -> bool:
    """Whether ``path`` may be a job's run list (checked exactly on the raw path)."""
    return path.startswith(_PREFIX) and path.endswith("/runs") and "/jobs/" in path


async def get_job_runs(app: FastAPI, scope: Scope, receive: Receive, send: Send) -> bool:
    names = _names(scope.get("raw_path"))
    paging = _paging(scope.get("query_string", b""))
    if names is None or paging is None:
        return False
    namespace, job = names
    limit, offset = paging
    try:
        found = headers(scope, b"authorization")
        auth.check_header(app.state.settings, "GET", found.get("authorization", ""))
        await app.state.lineage_writer.barrier()

        def read() -> common.Page[run_reads.Run] | None:
            with read_connection(app.state.engine) as conn:
                return run_reads.list_job_runs(conn, namespace, job, limit, offset)

        page = await run_in_threadpool(read)
    except Exception as exc:
        await answer_error(exc, "GET", scope["path"], scope, receive, send)
        return True
    if page is None:
        return False  # not a job's FQN: the route redirects or answers 404
    await views.page("runs", page, views.run)(scope, receive, send)
    return True


def _names(raw: object) -> tuple[str, str] | None:
    """(namespace, job) from the raw path, each segment decoded once, as the route's
    ``seg`` parameters are; None if the path is not ``…/namespaces/{ns}/jobs/{job}/runs``."""
    if not isinstance(raw, bytes | bytearray):
        return None
    parts = bytes(raw).split(b"?", 1)[0].decode("latin-1").split("/")
    if len(parts) != 8 or parts[:4] != ["", "api", "v1", "namespaces"]:
        return None
    if parts[5] != "jobs" or parts[7] != "runs" or not parts[4] or not parts[6]:
        return None
    namespace = unquote(parts[4], encoding="utf-8", errors="replace")
    job = unquote(parts[6], encoding="utf-8", errors="replace")
    if not (is_name(namespace) and is_name(job)):
        return None  # the route refuses it, naming the limit
    return namespace, job


def _paging(query: bytes) -> tuple[int, int] | None:
    """(limit, offset) if the query holds nothing else and both are valid; else None."""
    values = {"limit": 100, "offset": 0}
    seen: set[str] = set()
    for pair in query.decode("latin-1").split("&") if query else ():
        key, sep, value = pair.partition("=")
        if not sep or key not in values or key in seen:
            return None
        if not (value.isascii() and value.isdigit()) or len(value) > 9:
            return None
        seen.add(key)
        values[key] = int(value)
    if values["limit"] > MAX_LIMIT:
        return None
    return values["limit"], values["offset"]
