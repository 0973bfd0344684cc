"""Runs by id: read, facets, lifecycle transitions, upstream lineage."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Query

from strata.api import views
from strata.api.deps import Conn, Depth, Eng
from strata.lineage import graph as g
from strata.lineage import queries as q
from strata.lineage import writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Runs"])


@router.get("/jobs/runs/{id}")
def get_run(conn: Conn, id: UUID) -> dict[str, Any]:
    return views.run(q.get_run(conn, str(id)))


@router.get("/jobs/runs/{id}/facets")
def get_run_facets(
    conn: Conn, id: UUID, type: Annotated[Literal["run", "job"], Query()] = "run"
) -> dict[str, Any]:
    run = q.get_run(conn, str(id))
    facets = run.facets if type == "run" else q.run_job_facets(conn, str(id))
    return {"runId": run.uuid, "facets": facets}


@router.post("/jobs/runs/{id}/{action}")
def mark_run(
    eng: Eng,
    id: UUID,
    action: Literal["start", "complete", "fail", "abort"],
    at: datetime | None = None,
) -> dict[str, Any]:
    if at is not None and at.tzinfo is None:
        at = at.replace(tzinfo=datetime.now().astimezone().tzinfo)
    w.mark_run(eng, str(id), action, at=at)
    with read_tx(eng) as conn:
        return views.run(q.get_run(conn, str(id)))


def _upstream(conn: Conn, run_id: UUID, depth: int) -> dict[str, Any]:
    return {"runs": [views.upstream_run(u) for u in g.upstream_runs(conn, str(run_id), depth)]}


@router.get("/runlineage/upstream", tags=["Lineage"])
def run_lineage_upstream(
    conn: Conn, run_id: Annotated[UUID, Query(alias="runId")], depth: Depth = 20
) -> dict[str, Any]:
    return _upstream(conn, run_id, depth)


@router.get("/runs/{id}/lineage/upstream", tags=["Lineage"])
def run_upstream(conn: Conn, id: UUID, depth: Depth = 20) -> dict[str, Any]:
    return _upstream(conn, id, depth)
