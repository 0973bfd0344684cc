"""Names with slashes in URL path segments.

Dataset and namespace names often hold ``/`` (``s3://bucket/key``); clients send it as
``%2F``. ASGI servers decode the path before routing, so a middleware re-splits the raw
path and keeps ``/`` and ``%`` escaped inside a segment; the ``seg`` convertor decodes
each parameter exactly once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send


class SegmentConvertor(Convertor[str]):
    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return unquote(value)

    def to_string(self, value: str) -> str:
        return quote(value, safe="")


register_url_convertor("seg", SegmentConvertor())


def _escape(segment: str) -> str:
    return segment.replace("%", "%25").replace("/", "%2F")


class RawSegmentsMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw: Any = scope.get("raw_path")
            if isinstance(raw, bytes | bytearray):
                text = bytes(raw).split(b"?", 1)[0].decode("latin-1")
                parts = [
                    _escape(unquote(p, encoding="utf-8", errors="replace")) for p in text.split("/")
                ]
                scope = dict(scope)
                scope["path"] = "/".join(parts)
        await self.app(scope, receive, send)


def url_segment(value: str) -> str:
    """A name as one URL path segment."""
    return quote(value, safe="")
