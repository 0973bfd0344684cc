"""Every error answers JSON ``{"code", "message", "details"}`` with a 4xx; 5xx only for faults."""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import Scope

from strata.api.contract import allowed_methods
from strata.api.inputs import TIME_EXAMPLE
from strata.api.views import json_response
from strata.errors import StrataError
from strata.store.errors import translate

log = logging.getLogger("strata.api")


def error_response(status: int, code: str, message: str, **details: Any) -> Response:
    return json_response({"code": code, "message": message, "details": details}, status)


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:] or parts
    return ".".join(parts)


async def _strata_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StrataError)
    return json_response(exc.to_dict(), exc.http_status)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    raw = list(exc.errors())
    errors = [
        {"field": _loc(e.get("loc", ())), "message": str(e.get("msg", "")), "in": _where(e)}
        for e in raw
    ]
    first = errors[0] if errors else {"field": "", "message": "invalid request"}
    in_body = any(e["in"] == "body" for e in errors)
    if any(e.get("type") == "json_invalid" for e in raw):
        return error_response(
            400, "malformed_json", f"request body is not JSON: {first['message']}"
        )
    message = f"invalid value for {first['field']!r}: {first['message']}"
    if raw and not in_body:
        message = _parameter_message(request, first["field"], raw[0]) or message
    return error_response(
        422 if in_body else 400,
        "invalid_argument",
        message,
        field=first["field"],
        errors=errors,
    )


def _parameter_message(request: Request, field: str, error: Any) -> str | None:
    """What a query or path parameter accepts, for the errors worded better than pydantic's."""
    kind = str(error.get("type", ""))
    got = error.get("input")
    if kind.startswith(("datetime", "date_", "timezone")):
        return f"{field} must be an ISO-8601 date-time such as {TIME_EXAMPLE}, got {got!r}"
    bounds = _int_bounds(request, field)
    if bounds is not None and kind in ("int_parsing", "greater_than_equal", "less_than_equal"):
        return f"{field} must be an integer from {bounds[0]} to {bounds[1]}, got {got!r}"
    return None


def _int_bounds(request: Request, field: str) -> tuple[int, int] | None:
    """The declared ``ge``/``le`` of the route's integer parameter ``field``, if both are."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return None
    for param in (*dependant.query_params, *dependant.path_params):
        if param.alias == field:
            ge = next((m.ge for m in param.field_info.metadata if hasattr(m, "ge")), None)
            le = next((m.le for m in param.field_info.metadata if hasattr(m, "le")), None)
            if isinstance(ge, int) and isinstance(le, int):
                return ge, le
    return None


def _where(e: Any) -> str:
    loc = e.get("loc", ())
    return str(loc[0]) if loc else ""


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return http_error_response(exc, request.scope)


def http_error_response(exc: StarletteHTTPException, scope: Scope | None = None) -> Response:
    """``exc`` as JSON; a 405 lists in ``Allow`` every method the path answers (Starlette
    names only those of the first route whose path matched)."""
    codes = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 415: "unsupported"}
    headers = dict(exc.headers or {})
    message = str(exc.detail)
    if exc.status_code == 405 and scope is not None and "app" in scope:
        methods = allowed_methods(scope["app"], scope["path"])
        headers["Allow"] = ", ".join(methods)
        message = f"{scope.get('method')} is not allowed here; use {' or '.join(methods)}"
    resp = error_response(exc.status_code, codes.get(exc.status_code, "http_error"), message)
    for k, v in headers.items():
        resp.headers[k] = v
    return resp


async def _store_error(_request: Request, exc: Exception) -> Response:
    """A database error no store helper mapped (a safety net: they all map them)."""
    assert isinstance(exc, sa.exc.DBAPIError)
    error = translate(exc)
    log.warning("store error answered %s: %s", error.http_status, error.message)
    return json_response(error.to_dict(), error.http_status)


async def _fault(request: Request, exc: Exception) -> Response:
    return fault_response(request.method, request.url.path, exc)


def fault_response(method: str, path: str, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", method, path, exc_info=exc)
    return error_response(500, "internal_error", "internal server error; see the server log")


def install(app: FastAPI) -> None:
    app.add_exception_handler(StrataError, _strata_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(sa.exc.DBAPIError, _store_error)
    app.add_exception_handler(Exception, _fault)
