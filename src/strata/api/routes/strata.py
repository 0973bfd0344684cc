"""Strata routes beyond Marquez."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from strata.api import views
from strata.api.deps import reading
from strata.lineage.query import provenance as p

router = APIRouter(prefix="/strata", tags=["Strata"])


@router.get("/provenance/{namespace:seg}/{dataset:seg}", response_model=views.Json)
def get_provenance(
    request: Request,
    namespace: str,
    dataset: str,
    version: Annotated[str | None, Query(max_length=64)] = None,
    depth: Annotated[int, Query(ge=0, le=100)] = 10,
) -> Response:
    """Which run, job version and exact input versions produced a dataset version, recursively."""
    with reading(request) as conn:
        tree = p.provenance(conn, namespace, dataset, version, depth)
    return views.json_response(views.provenance(tree))
