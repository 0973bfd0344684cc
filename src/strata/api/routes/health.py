"""``GET /api/v1/health``: whether this server can take and fold events, for load
balancers and monitors (open without a token, and never waits for the fold)."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response

from strata.api import views
from strata.api.contract import errors
from strata.errors import StrataError
from strata.lineage.record.writer import GroupWriter
from strata.store.errors import mapped

router = APIRouter(tags=["Strata"])


@router.get("/health", response_model=views.Json, responses=errors(503))
async def get_health(request: Request) -> Response:
    """200 when the lineage writer runs and the store answers; 503 naming what does not."""
    writer: GroupWriter = request.app.state.lineage_writer
    writer_state = writer.health()
    store = await asyncio.to_thread(_store_problem, request.app.state.engine)
    ok = writer_state["running"] and store is None
    body = {
        "status": "ok" if ok else "unavailable",
        "writer": writer_state,
        "store": {"reachable": store is None, "error": store},
    }
    return views.json_response(body, 200 if ok else 503)


def _store_problem(engine: sa.Engine) -> str | None:
    try:
        with mapped(), engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except StrataError as exc:
        return exc.message
    return None
