"""Raw lineage events, newest first: all of them, or those touching one namespace."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from strata.store.owners import events as stored_events


def list_events(
    conn: Connection, limit: int, offset: int, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Events by event time, newest first (ties by id, so pages do not overlap)."""
    return stored_events.newest(conn, limit, offset, namespace)
