"""What changed in a time range: the runs by state with the failed ones, and the datasets
that gained versions. The dashboard and the morning's "what changed" read these (Marquez's
UI counts runs from every job's latest run, which says nothing of a job that ran many
times)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.store.owners import namespaces
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


def iso(value: datetime) -> str:
    """An instant as the API writes it: ISO 8601 with ``Z`` for UTC."""
    return value.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class FailedRun:
    namespace: str
    job: str
    run: str
    at: datetime


@dataclass(frozen=True)
class RunSummary:
    """The runs created since a time: how many ended in each state, how many jobs ran,
    and the latest failures."""

    since: datetime
    states: dict[str, int]
    jobs: int
    failed: list[FailedRun]

    def to_dict(self) -> dict[str, Any]:
        return {
            "states": self.states,
            "total": sum(self.states.values()),
            "jobs": self.jobs,
            "failed": [
                {"job": {"namespace": f.namespace, "name": f.job}, "run": f.run, "at": iso(f.at)}
                for f in self.failed
            ],
        }


def run_summary(
    conn: Connection,
    since: datetime,
    until: datetime | None = None,
    failures: int = 10,
    namespace: str | None = None,
) -> RunSummary:
    """Runs created at or after ``since`` and before ``until`` (``ix_runs_created``
    answers the range), of jobs in ``namespace`` if named."""
    r, j = stored_runs.relation(), job_rows.relation()
    recent = sa.and_(r.c.created_at >= since, r.c.created_at < until if until else sa.true())
    if namespace is not None:
        recent = sa.and_(recent, r.c.job_uuid.in_(_jobs_in(namespace)))
    by_state = sa.select(r.c.state, sa.func.count()).where(recent).group_by(r.c.state)
    counted = [(str(row[0]), int(row[1])) for row in conn.execute(by_state)]
    ran = conn.execute(sa.select(sa.func.count(sa.distinct(r.c.job_uuid))).where(recent))
    failed = conn.execute(
        sa.select(j.c.namespace, j.c.name, r.c.uuid, sa.func.coalesce(r.c.ended_at, r.c.updated_at))
        .join(j, j.c.uuid == r.c.job_uuid)
        .where(recent, r.c.state == "FAILED")
        .order_by(r.c.created_at.desc(), r.c.uuid.desc())
        .limit(failures)
    ).all()
    return RunSummary(
        since=since,
        states=dict(counted),
        jobs=int(ran.scalar_one()),
        failed=[FailedRun(x[0], x[1], str(x[2]), x[3]) for x in failed],
    )


def _jobs_in(namespace: str) -> sa.Select[Any]:
    j = job_rows.relation()
    return sa.select(j.c.uuid).where(j.c.namespace == namespace)


@dataclass(frozen=True)
class NewVersions:
    """The versions one dataset gained in a time range."""

    namespace: str
    name: str
    is_lake: bool
    count: int
    latest_at: datetime
    latest_commit: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "isLake": self.is_lake,
            "count": self.count,
            "latestAt": iso(self.latest_at),
            "latestCommitId": self.latest_commit,
        }


def new_versions(
    conn: Connection, since: datetime, until: datetime, limit: int, namespace: str | None = None
) -> list[NewVersions]:
    """Each dataset (of ``namespace`` if named) that gained versions in [since, until),
    the most recent first (``ix_dataset_versions_created`` answers the range)."""
    v, d = _VERSIONS, _DATASETS
    latest = sa.func.max(v.c.created_at)
    rows = conn.execute(
        sa.select(
            d.c.namespace,
            d.c.name,
            d.c.is_lake,
            sa.func.count(),
            latest,
            sa.func.max(v.c.commit_id),
        )
        .join(d, d.c.uuid == v.c.dataset_uuid)
        .where(
            v.c.created_at >= since,
            v.c.created_at < until,
            d.c.deleted_at.is_(None),
            d.c.is_hidden.is_(False),
            d.c.namespace == namespace if namespace is not None else sa.true(),
        )
        .group_by(d.c.uuid, d.c.namespace, d.c.name, d.c.is_lake)
        .order_by(latest.desc(), d.c.namespace, d.c.name)
        .limit(limit)
    ).all()
    return [
        NewVersions(
            str(x[0]), str(x[1]), bool(x[2]), int(x[3]), x[4], None if x[5] is None else int(x[5])
        )
        for x in rows
    ]


@dataclass(frozen=True)
class Changes:
    """What changed in [since, until) (in one namespace, or all): new versions by
    dataset, and the runs."""

    since: datetime
    until: datetime
    versions: list[NewVersions]
    runs: RunSummary
    namespace: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": iso(self.since),
            "until": iso(self.until),
            "namespace": self.namespace,
            "versions": [n.to_dict() for n in self.versions],
            "runs": self.runs.to_dict(),
        }


def changes(
    conn: Connection, since: datetime, until: datetime, limit: int, namespace: str | None = None
) -> Changes:
    """The datasets that gained versions and the runs created in [since, until), at most
    ``limit`` of each list (a range that ends before it starts holds nothing); with
    ``namespace``, only its datasets and its jobs' runs (an unknown one is
    :class:`~strata.errors.NotFound`)."""
    if namespace is not None and namespaces.get(conn, namespace) is None:
        raise NotFound(
            f"namespace {namespace!r} not found; GET /api/v1/namespaces lists the store's "
            "namespaces (the lineage pages show them too), or leave it out for all",
            namespace=namespace,
        )
    return Changes(
        since,
        until,
        new_versions(conn, since, until, limit, namespace),
        run_summary(conn, since, until, failures=limit, namespace=namespace),
        namespace,
    )
