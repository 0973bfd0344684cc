"""The run rows: ``runs``, one per run the fold has seen (or a parent only its children
named), with its job, job version, state, times and facets.

The fold is the only writer: it upserts the rows of the runs a group touched, makes a
parent run known only from a child's parent facet, and lineage retention deletes old
runs. Reads of runs alone are typed functions here; a statement that also reads another
family (a run's job name, the version it wrote) selects from :func:`relation`, a
read-only name for the table, so the statement stays one statement.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store import bulk
from strata.store.schema import runs

_R = runs


def relation(name: str = "runs") -> NamedFromClause:
    """The runs table under ``name``, to read in a statement that joins it to another
    family's tables (an alias: it can be selected from, not written)."""
    return _R.alias(name)


# --- writes -----------------------------------------------------------------------------


class RunRow(NamedTuple):
    """A run as the fold of its events determines it."""

    uuid: str
    job_uuid: str
    job_version_uuid: str | None
    parent_run_uuid: str | None
    state: str
    nominal_start_time: datetime | None
    nominal_end_time: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    transitioned_at: datetime | None
    created_at: datetime
    updated_at: datetime
    facets: dict[str, Any]
    error: Any
    io_facets: dict[str, Any] | None
    partition_key: str | None


_COLUMNS = RunRow._fields


def upsert(conn: Connection, rows: Sequence[RunRow]) -> None:
    """Write ``rows`` whole, over any stored row of the same run (one statement)."""
    if rows:
        stmt = bulk.upsert(conn, _R, _COLUMNS, ["uuid"])
        bulk.execute_many(conn, stmt, [dict(zip(_COLUMNS, row, strict=True)) for row in rows])


@dataclass(frozen=True, slots=True)
class Placeholder:
    """What a child's event says of a parent run known only from it: a state and times."""

    state: str
    started_at: datetime | None
    ended_at: datetime | None
    transitioned_at: datetime | None


def add_placeholder(
    conn: Connection, run_uuid: str, job_uuid: str, at: datetime, said: Placeholder
) -> bool:
    """Make the parent run ``run_uuid`` of ``job_uuid`` from a child's event at ``at``;
    False if a row of that run exists (then nothing is written)."""
    values = {"uuid": run_uuid, "job_uuid": job_uuid, "facets": {}, **_placeholder(said)}
    return bulk.insert_ignore(conn, _R, {**values, "created_at": at, "updated_at": at}, ["uuid"])


def widen_placeholder(
    conn: Connection, run_uuid: str, job_uuid: str, at: datetime, said: Placeholder
) -> None:
    """Fold another child's event into a placeholder parent run: the earliest event's
    state wins (at the same time, the state that sorts first, so any order gives the
    same row), the run belongs to the job with the smaller uuid of those naming it (one
    parent run id named in two namespaces), and its times widen to cover ``at``."""
    conn.execute(_EARLIER_CHILD, {"r": run_uuid, "at": at, **_placeholder(said)})
    conn.execute(_SMALLER_JOB, {"r": run_uuid, "j": job_uuid})
    bulk.widen_times(conn, _R, "uuid", run_uuid, at)


def _placeholder(said: Placeholder) -> dict[str, Any]:
    return {
        "state": said.state,
        "started_at": said.started_at,
        "ended_at": said.ended_at,
        "transitioned_at": said.transitioned_at,
    }


def _earlier_child() -> Any:
    at = sa.bindparam("at", type_=_R.c.created_at.type)
    state = sa.bindparam("state", type_=_R.c.state.type)
    return (
        _R.update()
        .where(
            _R.c.uuid == sa.bindparam("r"),
            sa.or_(at < _R.c.created_at, sa.and_(at == _R.c.created_at, state < _R.c.state)),
        )
        .values(
            state=state,
            started_at=sa.bindparam("started_at", type_=_R.c.started_at.type),
            ended_at=sa.bindparam("ended_at", type_=_R.c.ended_at.type),
            transitioned_at=sa.bindparam("transitioned_at", type_=_R.c.transitioned_at.type),
        )
    )


_EARLIER_CHILD = _earlier_child()
_SMALLER_JOB = (
    _R.update()
    .where(_R.c.uuid == sa.bindparam("r"), _R.c.job_uuid > sa.bindparam("j"))
    .values(job_uuid=sa.bindparam("j"))
)


def delete(conn: Connection, uuids: Sequence[str]) -> int:
    """Delete the runs ``uuids`` (what hangs on them must be gone first); how many were."""
    return int(conn.execute(_R.delete().where(_R.c.uuid.in_(uuids))).rowcount)


# --- reads of runs alone ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Detail:
    """A run's state, job version (for a build, its program version's uuid) and facets."""

    state: str
    job_version: str | None
    facets: dict[str, Any]


def details(conn: Connection, uuids: Collection[str]) -> dict[str, Detail]:
    """``run -> Detail`` of those of ``uuids`` that exist."""
    stmt = bulk.select_by_ids(
        "run-details", conn, _R.c.uuid, _R.c.uuid, _R.c.state, _R.c.job_version_uuid, _R.c.facets
    )
    return {
        str(u): Detail(state, version, dict(facets or {}))
        for u, state, version, facets in bulk.rows_by_ids(conn, stmt, sorted(set(uuids)))
    }


def has_running_children(conn: Connection, run_uuid: str) -> bool:
    """Whether a RUNNING run names ``run_uuid`` as its parent."""
    found = conn.execute(
        sa.select(_R.c.uuid).where(_R.c.parent_run_uuid == run_uuid, _R.c.state == "RUNNING")
    ).first()
    return found is not None


def children_by_state(conn: Connection, run_uuid: str) -> dict[str, int]:
    """How many runs name ``run_uuid`` as their parent, by state."""
    rows = conn.execute(
        sa.select(_R.c.state, sa.func.count())
        .where(_R.c.parent_run_uuid == run_uuid)
        .group_by(_R.c.state)
    )
    return {str(row[0]): int(row[1]) for row in rows}


def place_in_job(conn: Connection, job_uuid: str, created_at: datetime, uuid: str) -> int:
    """How many runs of the job came before or are this one, in the order of the job's run
    list (``ix_runs_job_created``): the run's number, oldest first from 1."""
    earlier = sa.or_(
        _R.c.created_at < created_at,
        sa.and_(_R.c.created_at == created_at, _R.c.uuid <= uuid),
    )
    counted = sa.select(sa.func.count()).where(_R.c.job_uuid == job_uuid, earlier)
    return int(conn.execute(counted).scalar_one())


def newest(conn: Connection, limit: int, *, job_uuid: str | None = None) -> list[str]:
    """The uuids of the last ``limit`` runs created (of one job, or of any), newest first."""
    q = sa.select(_R.c.uuid).order_by(_R.c.created_at.desc(), _R.c.uuid.desc()).limit(limit)
    if job_uuid is not None:
        q = q.where(_R.c.job_uuid == job_uuid)
    return [str(row[0]) for row in conn.execute(q)]


_LATEST_VERSIONED = (
    "SELECT q.j, r.created_at, r.job_version_uuid FROM q JOIN runs r ON r.uuid = ("
    "SELECT x.uuid FROM runs x WHERE x.job_uuid = q.j AND x.job_version_uuid IS NOT NULL"
    " ORDER BY x.created_at DESC, x.uuid DESC LIMIT 1)"
)


def latest_versioned(conn: Connection, jobs: Sequence[str]) -> dict[str, tuple[datetime, str]]:
    """``job -> (created at, job version)`` of each job's newest run that has a job
    version (one indexed lookup per job, ``ix_runs_job_created``)."""
    rows = bulk.lookup_rows(
        conn,
        ("latest-run",),
        "q",
        {"j": None},
        [{"j": j} for j in jobs],
        _LATEST_VERSIONED,
        (sa.column("j"), sa.column("created_at", _R.c.created_at.type), sa.column("v")),
    )
    return {str(row[0]): (row[1], str(row[2])) for row in rows}


# --- a partitioned transform's runs -------------------------------------------------------


def partition_page(
    conn: Connection, job_uuid: str, key: Mapping[str, Sequence[str]], limit: int, offset: int
) -> tuple[list[str], int]:
    """The uuids of a page of the job's partition runs for the partitions matching ``key``
    (each column named has one of its values), newest first, and how many match."""
    # Keys are `col=value` joined by `/`, and no value holds `/` or `=`: a component
    # found between slashes is that column's value, compared exactly on both backends.
    find = sa.func.strpos if conn.dialect.name == "postgresql" else sa.func.instr
    padded = sa.literal("/") + _R.c.partition_key + sa.literal("/")
    where = [_R.c.job_uuid == job_uuid, _R.c.partition_key.is_not(None)]
    where += [
        sa.or_(*[find(padded, f"/{col}={value}/") > 0 for value in values])
        for col, values in key.items()
    ]
    total = conn.execute(sa.select(sa.func.count()).select_from(_R).where(*where)).scalar_one()
    page = conn.execute(
        sa.select(_R.c.uuid)
        .where(*where)
        .order_by(_R.c.created_at.desc(), _R.c.uuid.desc())
        .limit(limit)
        .offset(offset)
    )
    return [str(row[0]) for row in page], int(total)


def newest_partition_key(conn: Connection, job_uuid: str) -> str | None:
    """The partition key of the job's latest partition run (None: it has none)."""
    key = conn.execute(
        sa.select(_R.c.partition_key)
        .where(_R.c.job_uuid == job_uuid, _R.c.partition_key.is_not(None))
        .order_by(_R.c.created_at.desc(), _R.c.uuid.desc())
        .limit(1)
    ).scalar()
    return str(key) if key else None


@dataclass(frozen=True)
class PartitionRun:
    """A partitioned transform's latest run of one partition."""

    partition: str
    run_uuid: str
    state: str | None
    started_at: datetime | None
    ended_at: datetime | None


def latest_partition_runs(conn: Connection, job_uuid: str) -> list[PartitionRun]:
    """The latest run of each partition of the job (none for a job not partitioned), by
    key."""
    ranked = (
        sa.select(
            _R.c.partition_key,
            _R.c.uuid,
            _R.c.state,
            _R.c.started_at,
            _R.c.ended_at,
            sa.func.row_number()
            .over(
                partition_by=_R.c.partition_key,
                order_by=(_R.c.created_at.desc(), _R.c.uuid.desc()),
            )
            .label("n"),
        )
        .where(_R.c.job_uuid == job_uuid, _R.c.partition_key.is_not(None))
        .subquery()
    )
    rows = conn.execute(
        sa.select(ranked).where(ranked.c.n == 1).order_by(ranked.c.partition_key)
    ).all()
    return [PartitionRun(x[0], x[1], x[2], x[3], x[4]) for x in rows]
