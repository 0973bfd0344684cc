"""Strata's summaries of a time range: the dashboard's runs of the last hours and what
changed between two times (Marquez's UI counts runs from every job's latest run, which
says nothing of a job that ran many times)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from strata.api import views
from strata.api.deps import Conn, QueryTime, time_param
from strata.api.inputs import aware_time
from strata.lineage.query import stats

router = APIRouter(prefix="/strata", tags=["Strata"])


@router.get("/summary")
def run_summary(conn: Conn, hours: Annotated[int, Query(ge=1, le=24 * 366)] = 24) -> dict[str, Any]:
    """The runs created in the last ``hours``: a count per state, how many jobs ran, and
    the latest failed runs with their jobs."""
    found = stats.run_summary(conn, datetime.now(UTC) - timedelta(hours=hours))
    runs = _runs_view(found)
    return {
        "since": views.ts(found.since),
        "hours": hours,
        "states": runs["states"],
        "runs": runs["total"],
        "jobs": runs["jobs"],
        "failed": runs["failed"],
    }


@router.get("/changes")
def changes(
    conn: Conn,
    since: Annotated[QueryTime, time_param("from this time (default: 24 hours ago)")] = None,
    until: Annotated[QueryTime, time_param("to this time (default: now)")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """What changed between two times: the datasets that gained versions (how many, the
    latest), and the runs, by state, with the failed ones. A range that ends before it
    starts holds nothing (the schema cannot say so, so it is not refused)."""
    end = aware_time(until, "until") or datetime.now(UTC)
    start = aware_time(since, "since") or end - timedelta(hours=24)
    runs = stats.run_summary(conn, start, end, failures=limit)
    return {
        "since": views.ts(start),
        "until": views.ts(end),
        "versions": [
            {
                "namespace": n.namespace,
                "name": n.name,
                "isLake": n.is_lake,
                "count": n.count,
                "latestAt": views.ts(n.latest_at),
                "latestCommitId": n.latest_commit,
            }
            for n in stats.new_versions(conn, start, end, limit)
        ],
        "runs": _runs_view(runs),
    }


def _runs_view(found: stats.RunSummary) -> dict[str, Any]:
    return {
        "states": found.states,
        "total": sum(found.states.values()),
        "jobs": found.jobs,
        "failed": [
            {"job": {"namespace": f.namespace, "name": f.job}, "run": f.run, "at": views.ts(f.at)}
            for f in found.failed
        ],
    }
