"""The walk of the dataset/job graph: which jobs a start node reaches within a depth.

The current graph is walked on PostgreSQL by one recursive query over the job versions'
edges (:func:`strata.store.owners.jobs.versions.walk_statement`; its cached generic plans
are the same index lookups); elsewhere, and for a graph as of a
time, breadth first with one batch of queries per level (:func:`walk_levels`) over the
edges in force: :class:`CurrentEdges` or :class:`EdgesAt`. Edges come from the job
versions' owner (both directions are indexed: by job version and by dataset).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lineage.query import common
from strata.lineage.query.nodes import NodeRef
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


def _expand_select() -> sa.Select[Any]:
    """Edges of the jobs whose current version touches any of ``:datasets`` (built once)."""
    a, b, j = versions_of.io_relation(), versions_of.io_relation("other"), job_rows.relation()
    return (
        sa.select(b.c.job_uuid, b.c.job_version_uuid, b.c.dataset_uuid, b.c.io_type)
        .select_from(a)
        # Through the job's primary key; current_version_uuid alone has no index.
        .join(
            j,
            sa.and_(j.c.uuid == a.c.job_uuid, j.c.current_version_uuid == a.c.job_version_uuid),
        )
        .join(b, b.c.job_version_uuid == a.c.job_version_uuid)
        .where(a.c.dataset_uuid.in_(sa.bindparam("datasets", expanding=True)))
    )


_EXPAND = _expand_select()


class Walker(Protocol):
    """What the breadth-first walk asks of a graph's edges."""

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]: ...

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]: ...

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]: ...


def _io_of(conn: Connection, versions: dict[str, str]) -> list[tuple[str, str, str]]:
    """(job, dataset, INPUT|OUTPUT) for the given job versions (primary-key lookups)."""
    by_version = {v: j for j, v in versions.items()}
    io = versions_of.io_relation()
    out = []
    for batch in common.chunks(by_version):
        for r in conn.execute(
            sa.select(io.c.job_version_uuid, io.c.dataset_uuid, io.c.io_type).where(
                io.c.job_version_uuid.in_(batch)
            )
        ).all():
            out.append((by_version[r.job_version_uuid], r.dataset_uuid, r.io_type))
    return out


class CurrentEdges:
    """Job/dataset edges of the current graph: each job at its current version."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]:
        """job -> its current version."""
        j = job_rows.relation()
        out: dict[str, str] = {}
        for batch in common.chunks(list(job_uuids)):
            for r in self.conn.execute(
                sa.select(j.c.uuid, j.c.current_version_uuid).where(j.c.uuid.in_(batch))
            ).all():
                if r.current_version_uuid:
                    out[r.uuid] = r.current_version_uuid
        return out

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]:
        return _io_of(self.conn, versions)

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
        """Jobs (not in ``known``) whose current version touches the datasets, with their edges.

        One query per batch: the touching edges, the job's current version and that
        version's other edges, joined in the database.
        """
        seen = set(known)
        out: dict[str, str] = {}
        edges: set[tuple[str, str, str]] = set()
        for batch in common.chunks(set(dataset_uuids)):
            for r in self.conn.execute(_EXPAND, {"datasets": batch}).all():
                if r.job_uuid not in seen:
                    out[r.job_uuid] = r.job_version_uuid
                    edges.add((r.job_uuid, r.dataset_uuid, r.io_type))
        return out, sorted(edges)


_RUNS = stored_runs.relation()


class EdgesAt:
    """Job/dataset edges of the graph in force at ``as_of``: each job at the version of its
    last run by then, datasets created by then."""

    def __init__(self, conn: Connection, as_of: datetime) -> None:
        self.conn = conn
        self.as_of = as_of

    def versions(self, job_uuids: Iterable[str]) -> dict[str, str]:
        """job -> the version of its last run at ``as_of`` (or its last version then)."""
        jobs = list(job_uuids)
        out = self._latest_at(_RUNS, jobs, _RUNS.c.job_version_uuid)
        missing = [j for j in jobs if j not in out]
        if missing:
            jv = versions_of.relation()
            out.update(self._latest_at(jv, missing, jv.c.uuid))
        return out

    def _latest_at(
        self, table: sa.FromClause, jobs: list[str], value: sa.ColumnElement[Any]
    ) -> dict[str, str]:
        out: dict[str, str] = {}
        for batch in common.chunks(jobs):
            rn = (
                sa.func.row_number()
                .over(
                    partition_by=table.c.job_uuid,
                    order_by=(table.c.created_at.desc(), table.c.uuid.desc()),
                )
                .label("rn")
            )
            inner = (
                sa.select(table.c.job_uuid, value.label("v"), rn)
                .where(
                    table.c.job_uuid.in_(batch),
                    table.c.created_at <= self.as_of,
                    value.is_not(None),
                )
                .subquery()
            )
            for r in self.conn.execute(
                sa.select(inner.c.job_uuid, inner.c.v).where(inner.c.rn == 1)
            ).all():
                out[r.job_uuid] = r.v
        return out

    def io(self, versions: dict[str, str]) -> list[tuple[str, str, str]]:
        """The versions' edges to datasets created by ``as_of``."""
        out = _io_of(self.conn, versions)
        born = self._datasets_born([d for _, d, _ in out])
        return [e for e in out if e[1] in born]

    def _datasets_born(self, uuids: list[str]) -> set[str]:
        d = _DATASETS
        born: set[str] = set()
        for batch in common.chunks(set(uuids)):
            born.update(
                self.conn.execute(
                    sa.select(d.c.uuid).where(d.c.uuid.in_(batch), d.c.created_at <= self.as_of)
                ).scalars()
            )
        return born

    def expand(
        self, dataset_uuids: Iterable[str], known: Iterable[str]
    ) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
        """Jobs (not in ``known``) whose version in force touches the datasets, with their edges."""
        seen = set(known)
        touching = self._jobs_touching(dataset_uuids)
        new = {jb: v for jb, v in touching.items() if jb not in seen}
        return new, self.io(new)

    def _jobs_touching(self, dataset_uuids: Iterable[str]) -> dict[str, str]:
        """job -> version for jobs whose version in force reads or writes any dataset."""
        io = versions_of.io_relation()
        pairs: set[tuple[str, str]] = set()
        for batch in common.chunks(set(dataset_uuids)):
            stmt = sa.select(io.c.job_uuid, io.c.job_version_uuid).where(
                io.c.dataset_uuid.in_(batch)
            )
            pairs.update((r.job_uuid, r.job_version_uuid) for r in self.conn.execute(stmt).all())
        if not pairs:
            return {}
        in_force = self.versions({jb for jb, _ in pairs})
        return {jb: v for jb, v in in_force.items() if (jb, v) in pairs}

    def dataset_versions(self, dataset_uuids: Iterable[str]) -> dict[str, str | None]:
        """dataset -> its version at ``as_of`` (the latest created at or before it)."""
        dv = _VERSIONS
        out: dict[str, str | None] = dict.fromkeys(dataset_uuids)
        for batch in common.chunks(list(out)):
            rn = (
                sa.func.row_number()
                .over(
                    partition_by=dv.c.dataset_uuid,
                    order_by=(dv.c.created_at.desc(), dv.c.uuid.desc()),
                )
                .label("rn")
            )
            inner = (
                sa.select(dv.c.dataset_uuid, dv.c.uuid, rn)
                .where(dv.c.dataset_uuid.in_(batch), dv.c.created_at <= self.as_of)
                .subquery()
            )
            for r in self.conn.execute(
                sa.select(inner.c.dataset_uuid, inner.c.uuid).where(inner.c.rn == 1)
            ).all():
                out[r.dataset_uuid] = r.uuid
        return out

    def latest_runs(self, versions: dict[str, str]) -> dict[str, str]:
        """job -> the id of its latest run at ``as_of``."""
        return self._latest_at(_RUNS, list(versions), _RUNS.c.uuid)


Walk = tuple[dict[str, str], set[tuple[str, str, str]]]
"""Jobs reached (job -> version in force) and their (job, dataset, INPUT|OUTPUT) edges."""


def walk_levels(walker: Walker, start: NodeRef, depth: int) -> Walk:
    """Breadth first, one batch of queries per job hop: each level's jobs and their edges."""
    if start.type == "JOB":
        new = walker.versions([start.uuid])
        level_edges = walker.io(new)
    else:
        new, level_edges = walker.expand([start.uuid], ())
    jobs: dict[str, str] = {}
    edges: set[tuple[str, str, str]] = set()
    seen_ds: set[str] = set()
    for level in range(depth + 1):
        if not new:
            break
        jobs.update(new)
        edges.update(level_edges)
        new_ds = {d for _, d, _ in level_edges} - seen_ds
        seen_ds |= new_ds
        if level == depth or not new_ds:
            break
        new, level_edges = walker.expand(new_ds, jobs)
    return jobs, edges


def walk_recursive(conn: Connection, start: NodeRef, depth: int) -> Walk:
    """The current graph's walk as one recursive query (PostgreSQL): the same jobs and edges
    as :func:`walk_levels`, without a round trip per hop."""
    stmt = versions_of.walk_statement(from_job=start.type == "JOB")
    jobs: dict[str, str] = {}
    edges: set[tuple[str, str, str]] = set()
    rows: Sequence[Sequence[Any]] = conn.execute(stmt, {"start": start.uuid, "depth": depth}).all()
    for version, job, dataset, io_type in rows:
        if job is None:
            # Versions are reached through their edges, so only the start job's version
            # can have none.
            jobs[start.uuid] = version
            continue
        jobs[job] = version
        edges.add((job, dataset, io_type))
    return jobs, edges
