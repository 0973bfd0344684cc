"""Strata's summaries of a time range: the dashboard's runs of the last hours and what
changed between two times (:mod:`strata.lineage.query.changes`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from strata.api import views
from strata.api.contract import errors
from strata.api.deps import Conn, QueryTime, time_param
from strata.api.inputs import aware_time
from strata.lineage.query import changes as ch

router = APIRouter(prefix="/strata", tags=["Strata"])


@router.get("/summary")
def run_summary(conn: Conn, hours: Annotated[int, Query(ge=1, le=24 * 366)] = 24) -> dict[str, Any]:
    """The runs created in the last ``hours``: a count per state, how many jobs ran, and
    the latest failed runs with their jobs."""
    since = datetime.now(UTC) - timedelta(hours=hours)
    found = ch.run_summary(conn, since).to_dict()
    return {
        "since": views.ts(since),
        "hours": hours,
        "states": found["states"],
        "runs": found["total"],
        "jobs": found["jobs"],
        "failed": found["failed"],
    }


@router.get("/changes", responses=errors(404))
def changes(
    conn: Conn,
    since: Annotated[QueryTime, time_param("from this time (default: 24 hours ago)")] = None,
    until: Annotated[QueryTime, time_param("to this time (default: now)")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    namespace: Annotated[
        str | None, Query(min_length=1, max_length=1024, description="only this namespace")
    ] = None,
) -> dict[str, Any]:
    """What changed between two times: the datasets that gained versions (how many, the
    latest), and the runs, by state, with the failed ones; with ``namespace``, only its
    datasets and its jobs' runs (404 for a namespace the store does not hold). A range
    that ends before it starts holds nothing (the schema cannot say so, so it is not
    refused)."""
    end = aware_time(until, "until") or datetime.now(UTC)
    start = aware_time(since, "since") or end - timedelta(hours=24)
    return ch.changes(conn, start, end, limit, namespace).to_dict()
