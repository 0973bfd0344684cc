"""Search over dataset and job names."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from strata.api import views
from strata.api.deps import reading
from strata.lineage.query import graph as g
from strata.lineage.query import search as search_reads

router = APIRouter(tags=["Search"])


@router.get("/search", response_model=views.Json)
def search(
    request: Request,
    q_: Annotated[str, Query(alias="q", min_length=1, max_length=1024)],
    filter: Annotated[Literal["DATASET", "JOB", "dataset", "job"] | None, Query()] = None,
    sort: Annotated[
        Literal["NAME", "UPDATE_AT", "RELEVANCE", "name", "update_at", "relevance"], Query()
    ] = "NAME",
    limit: Annotated[int, Query(ge=0, le=10_000)] = 10,
    namespace: str | None = None,
) -> Response:
    """Datasets and jobs whose name holds ``q``, as Marquez searches; ``sort=RELEVANCE``
    (beyond Marquez) ranks whole-name matches, then prefixes, then a part's prefix."""
    kind = filter.upper() if filter else None
    order = sort.upper()
    with reading(request) as conn:
        page = search_reads.search(
            conn,
            q_,
            "DATASET" if kind == "DATASET" else "JOB" if kind == "JOB" else None,
            "NAME" if order == "NAME" else "RELEVANCE" if order == "RELEVANCE" else "UPDATE_AT",
            limit,
            namespace,
        )
    results = [
        {
            "type": h.type,
            "name": h.name,
            "updatedAt": views.ts(h.updated_at),
            "namespace": h.namespace,
            "nodeId": (g.dataset_node_id if h.type == "DATASET" else g.job_node_id)(
                h.namespace, h.name
            ),
        }
        for h in page.items
    ]
    # Marquez counts the results it returns, not every match (its SearchResults).
    return views.json_response({"totalCount": len(results), "results": results})
