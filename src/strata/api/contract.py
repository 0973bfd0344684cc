"""The OpenAPI contract: every status a route can answer, each error with the one error body.

Statuses are derived from what an operation takes (:func:`openapi`): any input can be refused
(400), a path names something that may not exist (404), a JSON body can fail its model
(422), and every route checks tokens (401, 403) and needs the store (503). A route adds
what only it answers (redirects, 413, 415, 409, 410) with ``responses=`` from
:func:`errors`. FastAPI's own 422 (its validation schema, which this API never answers
with) is taken out of the document, and path names carry the limits
:mod:`strata.api.inputs` enforces.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel, Field

from strata.api import event_schema
from strata.api.auth import OPEN_PATHS
from strata.api.inputs import NO_NUL
from strata.limits import MAX_NAME_BYTES

Responses = dict[int | str, dict[str, Any]]


class ErrorBody(BaseModel):
    """Every error the API answers: a stable code, a message naming the bad value and the
    fix, and details for machines (the field, the value, candidates, …)."""

    code: str = Field(description="stable machine-readable error code, e.g. invalid_argument")
    message: str = Field(description="what was wrong and what to do about it")
    details: dict[str, Any] = Field(description="the field, value or candidates concerned")


WHY: dict[int, str] = {
    300: "several jobs have this name: the candidates, each with its URL",
    301: "the job moved: Location is its URL under its current name",
    400: "bad input: the message and details name the parameter and what it accepts",
    401: "a bearer token is needed (only when the server has tokens configured)",
    403: "the token may only read",
    404: "the named object does not exist",
    409: "a conflicting write won; retry on the current state",
    410: "the version's data was purged",
    413: "the request body is too large",
    415: "the request body's Content-Encoding is not supported (use gzip or none)",
    422: "the JSON body does not have the documented shape",
    503: "the metadata store is unusable (unreachable, or at an unknown schema version)",
}


def errors(*statuses: int) -> Responses:
    """``responses=`` for a route: each status with :class:`ErrorBody` (301: no body)."""
    out: Responses = {}
    for status in statuses:
        if status == 301:
            out[status] = {
                "description": WHY[status],
                "headers": {"Location": {"schema": {"type": "string"}}},
                "content": {},
            }
        else:
            out[status] = {"model": ErrorBody, "description": WHY[status]}
    return out


JOB_MOVED = errors(300, 301)  # routes reading a job by a name it no longer has


def _derived(op: dict[str, Any]) -> list[int]:
    """The statuses an operation can answer because of what it takes."""
    params = op.get("parameters", [])
    statuses = [401, 403, 503]
    if params or "requestBody" in op:
        statuses.append(400)
    if any(p.get("in") == "path" for p in params):
        statuses.append(404)
    if "requestBody" in op:
        statuses.append(422)
    return statuses


def declare(app: FastAPI) -> None:
    """Serve the document :func:`openapi` makes."""
    app.openapi = lambda: openapi(app)  # type: ignore[method-assign]


def openapi(app: FastAPI) -> dict[str, Any]:
    """The document, made once: FastAPI's, with every error status a route can answer."""
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            routes=app.routes,
        )
        _drop_framework_422(doc)
        _declare_errors(doc)
        _name_limits(doc)
        _query_text(doc)
        _security(doc)
        doc["components"]["schemas"].update(event_schema.components())
        app.openapi_schema = doc
    return app.openapi_schema


def _operations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for item in doc.get("paths", {}).values() for op in item.values()]


def _drop_framework_422(doc: dict[str, Any]) -> None:
    ref = "#/components/schemas/HTTPValidationError"
    for op in _operations(doc):
        responses = op.get("responses", {})
        content = responses.get("422", {}).get("content", {})
        if content.get("application/json", {}).get("schema", {}).get("$ref") == ref:
            del responses["422"]
    schemas = doc.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


def _declare_errors(doc: dict[str, Any]) -> None:
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    for op in _operations(doc):
        responses = op.setdefault("responses", {})
        for status in _derived(op):
            responses.setdefault(str(status), {"description": WHY[status], "content": body})


def _name_limits(doc: dict[str, Any]) -> None:
    for op in _operations(doc):
        for param in op.get("parameters", []):
            schema = param.get("schema", {})
            if (
                param.get("in") == "path"
                and schema.get("type") == "string"
                and ("format" not in schema and "enum" not in schema)
            ):
                schema.update(minLength=1, maxLength=MAX_NAME_BYTES, pattern=NO_NUL)
                param.setdefault(
                    "description",
                    f"a name: at most {MAX_NAME_BYTES:,} bytes of UTF-8, no NUL character",
                )


def _query_text(doc: dict[str, Any]) -> None:
    """Free-text query values hold no NUL character (every route refuses one)."""
    for op in _operations(doc):
        for param in op.get("parameters", []):
            schema = param.get("schema", {})
            texts = [schema, *schema.get("anyOf", [])]
            free = not any(k in schema for k in ("pattern", "enum", "format"))
            if param.get("in") == "query" and free:
                for branch in texts:
                    if branch.get("type") == "string" and not branch.get("format"):
                        branch.setdefault("pattern", NO_NUL)


_BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "a read or write token; needed only where the server has tokens set "
    "(reads take either, writes a write token)",
}


def _security(doc: dict[str, Any]) -> None:
    """Declare the bearer scheme on every API operation but the health check."""
    doc.setdefault("components", {})["securitySchemes"] = {"bearerAuth": _BEARER}
    for path, item in doc.get("paths", {}).items():
        if path.startswith("/api/") and path not in OPEN_PATHS:
            for op in item.values():
                op["security"] = [{"bearerAuth": []}]


@lru_cache(maxsize=256)
def _template(path: str) -> re.Pattern[str]:
    return re.compile(
        "".join(
            "[^/]+" if part.startswith("{") else re.escape(part)
            for part in re.split(r"(\{[^}]+\})", path)
        )
        + "$"
    )


def allowed_methods(app: FastAPI, path: str) -> list[str]:
    """The methods the document lists for ``path`` (as routed: ``/`` in a name escaped)."""
    methods: set[str] = set()
    for template, item in app.openapi().get("paths", {}).items():
        if _template(template).match(path):
            methods.update(m.upper() for m in item)
    return sorted(methods)
