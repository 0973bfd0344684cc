"""``GET /api/v1/strata/server``: what this server offers a visitor, asked by the pages
before they draw (open without a token, like health)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from strata import __version__
from strata.api import auth, views
from strata.settings import Settings

router = APIRouter(tags=["Strata"])


@router.get("/strata/server", response_model=views.Json)
def get_server(request: Request) -> Response:
    """The version; whether builds are offered (pipelines are configured); whether tokens
    are needed; and what the request's own token may do: ``write``, ``read`` or ``none``."""
    settings: Settings = request.app.state.settings
    return views.json_response(
        {
            "version": __version__,
            "builds": bool(settings.pipelines),
            "tokens": bool(settings.read_tokens or settings.write_tokens),
            "access": auth.access(settings, request.headers.get("authorization", "")),
        }
    )
