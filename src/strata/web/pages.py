"""Serves the web UI: ``/`` is the page, ``/ui/…`` its scripts, styles and vendored
libraries. The pages hold no data; everything they show they read from ``/api/v1`` with
the visitor's token, so the API's auth guards them as it guards any client."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
# Revalidated each load (a cheap 304), so a new release's scripts are picked up at once.
_NO_STALE = {"Cache-Control": "no-cache"}


class _Static(StaticFiles):
    def file_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        response = super().file_response(*args, **kwargs)
        response.headers.update(_NO_STALE)
        return response


async def _index() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers=_NO_STALE)


def mount(app: FastAPI) -> None:
    """Add the page at ``/`` and its files at ``/ui`` to ``app`` (not in the OpenAPI)."""
    app.add_api_route("/", _index, methods=["GET"], include_in_schema=False)
    app.mount("/ui", _Static(directory=STATIC), name="ui")
