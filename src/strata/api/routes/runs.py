"""Runs by id: read, facets, lifecycle transitions, upstream lineage."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal, get_args
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.engine import Engine

from strata.api import views
from strata.api.contract import errors
from strata.api.deps import At, Depth, Eng, reading
from strata.api.inputs import check_time
from strata.lineage.query import runs as run_reads
from strata.lineage.query import upstream_runs as ur
from strata.lineage.record import marquez_writes as w
from strata.store.engine import read_tx
from strata.store.owners.runs import rows as stored_runs

router = APIRouter(tags=["Runs"])
Action = Literal["start", "complete", "fail", "abort"]


@router.get("/jobs/runs/{id}", response_model=views.Json)
def get_run(request: Request, id: UUID) -> Response:
    with reading(request) as conn:
        run = run_reads.get_run(conn, str(id))
    return views.json_response(views.run(run))


@router.get("/jobs/runs/{id}/facets", response_model=views.Json)
def get_run_facets(
    request: Request, id: UUID, type: Annotated[Literal["run", "job"], Query()] = "run"
) -> Response:
    with reading(request) as conn:
        run = run_reads.get_run(conn, str(id))
        facets = run.facets if type == "run" else run_reads.run_job_facets(conn, str(id))
    return views.json_response({"runId": run.uuid, "facets": facets})


def _mark_run(action: Action) -> Callable[[Engine, UUID, datetime | None], dict[str, Any]]:
    def mark_run(eng: Eng, id: UUID, at: At = None) -> dict[str, Any]:
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=datetime.now().astimezone().tzinfo)
        w.mark_run(eng, str(id), action, at=None if at is None else check_time("at", at))
        with read_tx(eng) as conn:
            return views.run(run_reads.get_run(conn, str(id)))

    mark_run.__doc__ = f"Mark the run {action}, at ``at`` (default: now)."
    return mark_run


# One route per action, as Marquez has: a path of its own each, so another verb on
# ``/jobs/runs/{id}/facets`` is a 405, not a bad action.
for _action in get_args(Action):
    router.add_api_route(
        f"/jobs/runs/{{id}}/{_action}",
        _mark_run(_action),
        methods=["POST"],
        name=f"mark_run_{_action}",
    )


def _upstream(request: Request, run_id: UUID, depth: int) -> Response:
    with reading(request) as conn:
        runs = ur.upstream_runs(conn, str(run_id), depth)
    return views.json_response({"runs": [views.upstream_run(u) for u in runs]})


@router.get(
    "/runlineage/upstream", tags=["Lineage"], response_model=views.Json, responses=errors(404)
)
def run_lineage_upstream(
    request: Request, run_id: Annotated[UUID, Query(alias="runId")], depth: Depth = 20
) -> Response:
    return _upstream(request, run_id, depth)


@router.get("/runs/{id}/lineage/upstream", tags=["Lineage"], response_model=views.Json)
def run_upstream(request: Request, id: UUID, depth: Depth = 20) -> Response:
    return _upstream(request, id, depth)


@router.get("/strata/runs/{id}", tags=["Strata"], response_model=views.Json)
def get_run_detail(request: Request, id: UUID) -> Response:
    """A run as ``GET /jobs/runs/{id}`` has it, with its job, its state history (every
    transition with its time, oldest first) and the lake commit id of each dataset version
    it read or wrote that has one (``commitIds``: version → commit id), its ``number``
    among its job's runs (1 for the oldest, in the order of the job's run list), its child
    runs by state (``childRuns``), and ``reportedBy``: ``children`` for a parent run no
    event was about, known only from its children's parent facets (its ``state`` is then
    their earliest event's, as Marquez keeps it)."""
    with reading(request) as conn:
        run = run_reads.get_run(conn, str(id))
        states = run_reads.run_states(conn, run.uuid)
        touched = [v.version for v in (*run.input_versions, *run.output_versions)]
        commits = run_reads.commit_ids(conn, touched)
        number = run_reads.run_number(conn, run)
        children = stored_runs.children_by_state(conn, run.uuid)
        own = run_reads.run_has_own_events(conn, run.uuid)
    history = [{"state": x.state, "transitionedAt": views.ts(x.at)} for x in states]
    extra = {
        "states": history,
        "commitIds": commits,
        "number": number,
        "childRuns": children,
        "reportedBy": "itself" if own else "children",
    }
    return views.json_response({**views.run_with_job(run), **extra})


@router.get("/strata/runs", tags=["Strata"], response_model=views.Json)
def get_recent_runs(request: Request, limit: Annotated[int, Query(ge=1, le=1000)] = 20) -> Response:
    """The latest runs of every job, newest first, each with its job."""
    with reading(request) as conn:
        runs = run_reads.recent_runs(conn, limit)
    return views.json_response({"runs": [views.run_with_job(r) for r in runs]})
