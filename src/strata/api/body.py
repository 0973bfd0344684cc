"""Request bodies read by hand: gzip, size limits and JSON errors that name the problem."""

from __future__ import annotations

import json
import zlib
from typing import Any

from fastapi import Request
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


def no_body(request: Request) -> None:
    """Refuse a body on an action whose settings are query parameters: a body would be
    ignored, and ``{"dry_run": true}`` sent there would run the pass for real."""
    length = request.headers.get("content-length", "0").strip()
    if (length.isdigit() and int(length) > 0) or "transfer-encoding" in request.headers:
        raise InvalidArgument(
            f"{request.method} {request.url.path} reads no request body; pass its settings "
            "as query parameters (e.g. ?dry_run=true)",
            field="body",
        )
