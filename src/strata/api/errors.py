"""Every error answers JSON ``{"code", "message", "details"}`` with a 4xx; 5xx only for faults."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from strata.api.views import json_response
from strata.errors import StrataError

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


async def _validation_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {"field": _loc(e.get("loc", ())), "message": str(e.get("msg", "")), "in": _where(e)}
        for e in exc.errors()
    ]
    first = errors[0] if errors else {"field": "", "message": "invalid request"}
    in_body = any(e["in"] == "body" for e in errors)
    if any(e.get("type") == "json_invalid" for e in exc.errors()):
        return error_response(
            400, "malformed_json", f"request body is not JSON: {first['message']}"
        )
    return error_response(
        422 if in_body else 400,
        "invalid_argument",
        f"invalid value for {first['field']!r}: {first['message']}",
        field=first["field"],
        errors=errors,
    )


def _where(e: Any) -> str:
    loc = e.get("loc", ())
    return str(loc[0]) if loc else ""


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    return http_error_response(exc)


def http_error_response(exc: StarletteHTTPException) -> Response:
    codes = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 415: "unsupported"}
    resp = error_response(
        exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail)
    )
    for k, v in (exc.headers or {}).items():
        resp.headers[k] = v
    return resp


async def _fault(request: Request, exc: Exception) -> Response:
    return fault_response(request.method, request.url.path, exc)


def fault_response(method: str, path: str, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", method, path, exc_info=exc)
    return error_response(500, "internal_error", "internal server error; see the server log")


def install(app: FastAPI) -> None:
    app.add_exception_handler(StrataError, _strata_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _fault)
