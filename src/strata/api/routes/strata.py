"""Strata routes beyond Marquez."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from strata.api import views
from strata.api.deps import Conn
from strata.lineage import provenance as p

router = APIRouter(prefix="/strata", tags=["Strata"])


@router.get("/provenance/{namespace:seg}/{dataset:seg}")
def get_provenance(
    conn: Conn,
    namespace: str,
    dataset: str,
    version: Annotated[str | None, Query(max_length=64)] = None,
    depth: Annotated[int, Query(ge=0, le=100)] = 10,
) -> dict[str, Any]:
    """Which run, job version and exact input versions produced a dataset version, recursively."""
    return views.provenance(p.provenance(conn, namespace, dataset, version, depth))
