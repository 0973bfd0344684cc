"""Marquez's raw event lists beyond ``/events/lineage``: all events, or one namespace's."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from strata.api.deps import Conn, Limit, Offset
from strata.lineage.query import search

router = APIRouter(tags=["Lineage"])


@router.get("/events")
def list_events(conn: Conn, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    """Every stored lineage event, newest event time first."""
    return {"events": search.all_events(conn, limit, offset)}


@router.get("/events/{namespace:seg}")
def list_namespace_events(
    conn: Conn, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    """Events whose job, dataset, inputs or outputs are in ``namespace``, newest first."""
    return {"events": search.all_events(conn, limit, offset, namespace)}
