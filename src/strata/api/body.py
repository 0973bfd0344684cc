"""Request bodies read by hand: gzip, size limits and JSON errors that name the problem."""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from strata.errors import InvalidArgument
from strata.store import jsoncodec

MAX_BODY = 64 * 1024 * 1024  # decompressed; events of several MB are normal, GBs are not


async def read_json(request: Request) -> Any:
    raw = bytearray()
    async for chunk in request.stream():
        add_chunk(raw, chunk)
    return decode_json(bytes(raw), request.headers.get("content-encoding", "identity"))


def check_length(declared: str | None) -> None:
    """Refuse a declared ``Content-Length`` past :data:`MAX_BODY` before reading any of it."""
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
        raise HTTPException(413, f"request body is larger than {MAX_BODY} bytes")


def add_chunk(raw: bytearray, chunk: bytes) -> None:
    """Append a chunk of a request body, refusing bodies past :data:`MAX_BODY`."""
    raw.extend(chunk)
    if len(raw) > MAX_BODY:
        raise HTTPException(413, f"request body is larger than {MAX_BODY} bytes")


def decode_json(data: bytes, content_encoding: str) -> Any:
    """A request body as JSON, gunzipped first for ``Content-Encoding: gzip``."""
    encoding = content_encoding.strip().lower()
    if encoding in ("gzip", "x-gzip"):
        data = _gunzip(data)
    elif encoding not in ("identity", ""):
        raise HTTPException(415, f"Content-Encoding {encoding!r} is not supported; use gzip")
    if not data.strip():
        raise InvalidArgument("request body is empty; send a JSON document", field="body")
    try:
        return jsoncodec.loads_strict(data)
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"request body is not UTF-8: {exc}", field="body") from exc
    except json.JSONDecodeError as exc:
        raise InvalidArgument(
            f"request body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            field="body",
        ) from exc
    except ValueError as exc:  # valid syntax, but no value every store can hold
        raise InvalidArgument(f"request body is not strict JSON: {exc}", field="body") from exc


def _gunzip(data: bytes) -> bytes:
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, MAX_BODY + 1)
    except zlib.error as exc:
        raise InvalidArgument(f"request body is not valid gzip: {exc}", field="body") from exc
    if len(out) > MAX_BODY or d.unconsumed_tail:
        raise HTTPException(413, f"decompressed request body is larger than {MAX_BODY} bytes")
    if not d.eof:
        raise InvalidArgument("request body is truncated gzip", field="body")
    return out


def settings_in_query(request: Request) -> None:
    """Refuse what an action whose settings are query parameters would ignore: a body,
    or a query parameter it does not take (``{"dry_run": true}`` sent as a body, or
    ``?dryrun=true``, would run the pass for real)."""
    where = f"{request.method} {request.url.path}"
    length = request.headers.get("content-length", "0").strip()
    if (length.isdigit() and int(length) > 0) or "transfer-encoding" in request.headers:
        raise InvalidArgument(
            f"{where} reads no request body; pass its settings as query parameters "
            "(e.g. ?dry_run=true)",
            field="body",
        )
    route = request.scope.get("route")
    known = _query_names(route.dependant) if isinstance(route, APIRoute) else set()
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise InvalidArgument(
            f"{where} takes no query parameter {unknown}; it takes {sorted(known) or 'none'}",
            field=unknown[0],
        )


def _query_names(dependant: Dependant) -> set[str]:
    names = {f.alias for f in dependant.query_params}
    for inner in dependant.dependencies:
        names |= _query_names(inner)
    return names
