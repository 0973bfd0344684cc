"""Writes from other sites: refused unless their origin is this server's or listed.

A browser lets a page on any site send a "simple" request (a form post, ``text/plain``
or no body) to any server, cookies or not, without asking first; only reading the
answer is blocked. With no tokens set (the default) such a request could write. So every
write names its body's type as JSON (a browser must ask before sending that cross-site),
and a write that carries an ``Origin`` other than the server's own or one in
``STRATA_ALLOWED_ORIGINS`` is refused before it reaches a route. Requests without an
``Origin`` (clients, scripts, curl) are not browsers' and pass. Preflights (``OPTIONS``
with ``Access-Control-Request-Method``) are answered here, ahead of the token check,
since a browser sends them without the page's token.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata.api.asgi import answer_error, headers
from strata.errors import Forbidden, UnsupportedMediaType
from strata.settings import Settings

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_ALLOW_METHODS = b"GET, HEAD, POST, PUT, DELETE, OPTIONS"
_ALLOW_HEADERS = b"Authorization, Content-Type, Content-Encoding"
_MAX_AGE = b"600"
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


def check_write(settings: Settings, scope: Scope) -> None:
    """Refuse a write from a site not allowed (403) or with a body not declared JSON (415)."""
    if scope["method"] not in WRITE_METHODS:
        return
    found = headers(scope, b"origin", b"content-type", b"content-length", b"transfer-encoding")
    origin = found.get("origin")
    if origin is not None and not origin_allowed(settings, scope, origin):
        raise Forbidden(
            f"a write from origin {origin!r} is refused: only this server's own pages and "
            "the origins in STRATA_ALLOWED_ORIGINS may write from a browser; add it there "
            "if it is yours",
            origin=origin,
        )
    if _has_body(found) and not _is_json(found.get("content-type", "")):
        declared = found.get("content-type")
        raise UnsupportedMediaType(
            f"a request body must be JSON, sent with 'Content-Type: application/json' "
            f"(got {'no Content-Type' if declared is None else repr(declared)})",
            field="Content-Type",
        )


def origin_allowed(settings: Settings, scope: Scope, origin: str) -> bool:
    """Whether ``origin`` is the server's own (as the request reached it) or listed."""
    wanted = _normal(origin)
    if wanted in {_normal(o) for o in settings.allowed_origins}:
        return True
    host = headers(scope, b"host").get("host")
    return host is not None and wanted == _normal(f"{scope.get('scheme', 'http')}://{host}")


def _normal(origin: str) -> str:
    text = origin.strip().lower().rstrip("/")
    scheme = text.partition("://")[0]
    port = _DEFAULT_PORTS.get(scheme)
    return text.removesuffix(port) if port else text


def _has_body(found: dict[str, str]) -> bool:
    length = found.get("content-length", "").strip()
    return "transfer-encoding" in found or length not in {"", "0"}


def _is_json(content_type: str) -> bool:
    media = content_type.partition(";")[0].strip().lower()
    json_suffixed = media.startswith("application/") and media.endswith("+json")
    return media == "application/json" or json_suffixed


class CrossSiteMiddleware:
    """Preflights, the cross-site write check, and CORS headers for listed origins."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope.get("path", "").startswith("/api/"):
            await self.app(scope, receive, send)
            return
        settings: Settings = scope["app"].state.settings
        found = headers(scope, b"origin", b"access-control-request-method")
        origin = found.get("origin")
        try:
            if scope["method"] == "OPTIONS" and origin and "access-control-request-method" in found:
                await _preflight(settings, scope, origin, send)
                return
            check_write(settings, scope)
        except Exception as exc:
            await answer_error(exc, scope["method"], scope["path"], scope, receive, send)
            return
        if origin is None or not origin_allowed(settings, scope, origin):
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _with_cors(send, origin))


async def _preflight(settings: Settings, scope: Scope, origin: str, send: Send) -> None:
    if not origin_allowed(settings, scope, origin):
        raise Forbidden(
            f"origin {origin!r} may not call this server from a browser; add it to "
            "STRATA_ALLOWED_ORIGINS if it is yours",
            origin=origin,
        )
    cors = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", _ALLOW_METHODS),
        (b"access-control-allow-headers", _ALLOW_HEADERS),
        (b"access-control-max-age", _MAX_AGE),
        (b"vary", b"Origin"),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 204, "headers": cors})
    await send({"type": "http.response.body", "body": b""})


def _with_cors(send: Send, origin: str) -> Send:
    """``send`` adding the headers that let a listed origin's page read the answer."""

    async def send_cors(message: Message) -> None:
        if message["type"] == "http.response.start":
            extra = [
                (b"access-control-allow-origin", origin.encode("latin-1")),
                (b"vary", b"Origin"),
            ]
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return send_cors
