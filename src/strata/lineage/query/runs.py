"""Runs: one, a job's page of them (with their input and output versions), partition
runs, state histories and the runs a run's parent had."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query.common import DatasetVersionRef, Page, chunks
from strata.store import bulk
from strata.store.owners import events as stored_events
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.runs import counts as run_counts
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import rows as stored_runs
from strata.store.owners.runs import said as run_said

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

# --- runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    uuid: str
    job_uuid: str
    job_namespace: str
    job_name: str
    job_version_uuid: str | None
    parent_run_uuid: str | None
    state: str
    created_at: datetime
    updated_at: datetime
    nominal_start_time: datetime | None
    nominal_end_time: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    facets: dict[str, Any]
    input_versions: list[DatasetVersionRef] = field(default_factory=list)
    output_versions: list[DatasetVersionRef] = field(default_factory=list)
    # The inputFacets and outputFacets its events sent: {"inputs": [[ns, name, facets]]…}.
    io_facets: dict[str, Any] = field(default_factory=dict)

    def io_facets_of(self, side: Literal["inputs", "outputs"], ref: DatasetVersionRef) -> Any:
        """The facets the run sent for one of its input or output datasets."""
        for namespace, name, facets in self.io_facets.get(side) or ():
            if (namespace, name) == (ref.namespace, ref.name):
                return facets
        return {}

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return int((self.ended_at - self.started_at).total_seconds() * 1000)


_R = stored_runs.relation()


def _run_select() -> sa.Select[Any]:
    r, j = _R, job_rows.relation()
    return sa.select(r, j.c.namespace.label("job_namespace"), j.c.name.label("job_name")).join(
        j, j.c.uuid == r.c.job_uuid
    )


@dataclass(frozen=True)
class RunIO:
    """One version a run read (``read``) or wrote."""

    run: str
    read: bool
    namespace: str
    name: str
    version: str
    commit_id: int | None
    created_at: datetime
    producer: str | None  # the run that wrote the version


@functools.cache
def _run_io_select(dialect: str) -> sa.Select[Any]:
    dv, d = _VERSIONS, _DATASETS
    version = (dv.c.uuid, dv.c.commit_id, dv.c.created_at, dv.c.run_uuid.label("producer"))
    ins, read = bound.join_read(
        sa.select(d.c.namespace, d.c.name).select_from(dv).join(d, d.c.uuid == dv.c.dataset_uuid),
        version=dv.c.uuid,
    )
    ins = ins.with_only_columns(
        read.run.label("run"), sa.true().label("read"), d.c.namespace, d.c.name, *version
    ).where(bulk.one_of(dialect, read.run, "ids"))
    outs = (
        sa.select(dv.c.run_uuid.label("run"), sa.false().label("read"), d.c.namespace, d.c.name)
        .add_columns(*version)
        .join(d, d.c.uuid == dv.c.dataset_uuid)
        .where(bulk.one_of(dialect, dv.c.run_uuid, "ids"))
    )
    both = sa.union_all(ins, outs).subquery()
    return sa.select(both).order_by(both.c.namespace, both.c.name, both.c.uuid)


def run_io(conn: Connection, run_ids: Iterable[str]) -> list[RunIO]:
    """Every version the runs read and wrote, by dataset then version: the one reader of
    a run's inputs and outputs (runs, the lineage graph and provenance use it)."""
    ids = sorted(set(run_ids))
    dialect = conn.dialect.name
    batches = [ids] if dialect == "postgresql" else chunks(ids)  # one array on PostgreSQL
    stmt = _run_io_select(dialect)
    return [
        RunIO(
            x.run, bool(x.read), x.namespace, x.name, x.uuid, x.commit_id, x.created_at, x.producer
        )
        for batch in batches
        if batch
        for x in conn.execute(stmt, {"ids": batch})
    ]


def run_io_refs(
    conn: Connection, run_ids: Iterable[str]
) -> tuple[dict[str, list[DatasetVersionRef]], dict[str, list[DatasetVersionRef]]]:
    """The versions each run read and wrote, as references."""
    inputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    outputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    for x in run_io(conn, run_ids):
        into = inputs if x.read else outputs
        into[x.run].append(DatasetVersionRef(x.namespace, x.name, x.version))
    return inputs, outputs


def _runs_from_rows(conn: Connection, rows: Sequence[sa.Row[Any]]) -> list[Run]:
    inputs, outputs = run_io_refs(conn, [r.uuid for r in rows])
    return [
        Run(
            uuid=r.uuid,
            job_uuid=r.job_uuid,
            job_namespace=r.job_namespace,
            job_name=r.job_name,
            job_version_uuid=r.job_version_uuid,
            parent_run_uuid=r.parent_run_uuid,
            state=r.state,
            created_at=r.created_at,
            updated_at=r.updated_at,
            nominal_start_time=r.nominal_start_time,
            nominal_end_time=r.nominal_end_time,
            started_at=r.started_at,
            ended_at=r.ended_at,
            facets=dict(r.facets or {}),
            input_versions=inputs.get(r.uuid, []),
            output_versions=outputs.get(r.uuid, []),
            io_facets=dict(r.io_facets or {}),
        )
        for r in rows
    ]


def runs_by_uuid(conn: Connection, uuids: Iterable[str]) -> dict[str, Run]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_run_select().where(_R.c.uuid.in_(batch))).all())
    return {r.uuid: r for r in _runs_from_rows(conn, rows)}


def get_run(conn: Connection, run_id: str) -> Run:
    run = runs_by_uuid(conn, [run_id.lower()]).get(run_id.lower())
    if run is None:
        raise NotFound(f"run {run_id!r} not found", run_id=run_id)
    return run


def run_number(conn: Connection, run: Run) -> int:
    """The run's place among its job's runs, oldest first from 1: the order of the job's
    run list, so a run reported late takes its place in time."""
    return stored_runs.place_in_job(conn, run.job_uuid, run.created_at, run.uuid)


def run_has_own_events(conn: Connection, run_uuid: str) -> bool:
    """Whether any event was about this run itself, rather than naming it as a parent."""
    return stored_events.run_has_own(conn, run_uuid)


def recent_runs(conn: Connection, limit: int) -> list[Run]:
    """The last ``limit`` runs created, of any job, newest first."""
    order = stored_runs.newest(conn, limit)
    found = runs_by_uuid(conn, order)
    return [found[u] for u in order if u in found]


def commit_ids(conn: Connection, version_uuids: Iterable[str]) -> dict[str, int]:
    """The lake commit id of each of these dataset versions that has one."""
    v = _VERSIONS
    found: dict[str, int] = {}
    for batch in chunks(set(version_uuids)):
        rows = conn.execute(
            sa.select(v.c.uuid, v.c.commit_id).where(
                v.c.uuid.in_(batch), v.c.commit_id.is_not(None)
            )
        )
        found.update({str(row.uuid): int(row.commit_id) for row in rows})
    return found


@dataclass(frozen=True)
class RunState:
    state: str
    at: datetime


def run_states(conn: Connection, run_id: str) -> list[RunState]:
    """A run's state history, oldest first."""
    return [RunState(state, at) for state, at in run_said.state_history(conn, run_id.lower())]


def _job_by_fqn(namespace: Any, name: Any) -> sa.Select[Any]:
    """The job a URL names by its FQN; soft-deleted jobs are not found, as in Marquez."""
    j = job_rows.relation()
    return (
        sa.select(j.c.uuid, j.c.namespace, j.c.name)
        .where(j.c.namespace == namespace, j.c.name == name, j.c.is_hidden.is_(False))
        # Two jobs can share an FQN ("a.b", and "b" under "a"): always answer with the same one.
        .order_by(j.c.uuid)
        .limit(1)
    )


def _list_runs_select(job: sa.Select[Any], *, lateral: bool) -> sa.CompoundSelect[Any]:
    """A page of the runs of ``job`` (uuid, namespace, name), their inputs and outputs, and
    the job's run count: one statement.

    Rows are tagged by ``kind``: ``R`` a run, ``I``/``O`` one input/output version of a run,
    ``T`` the job itself with its run count (present whenever the job is, so an empty page
    still has its total and a missing job has no rows).
    """
    the_job = job.cte("job")
    page = _run_page(the_job)
    both = sa.union_all(
        _page_runs(page),
        _page_versions(page, "I", lateral=lateral),
        _page_versions(page, "O", lateral=lateral),
        _job_total(the_job),
    )
    col = both.selected_columns
    # Runs in page order; each run's versions by dataset name, as runs_by_uuid lists them.
    return both.order_by(
        col.kind, col.at.desc(), col.run_uuid.desc(), col.namespace, col.name, col.version
    )


_PAGE_RUN_COLS = [
    _R.c.job_version_uuid,
    _R.c.parent_run_uuid,
    _R.c.state,
    _R.c.updated_at,
    _R.c.nominal_start_time,
    _R.c.nominal_end_time,
    _R.c.started_at,
    _R.c.ended_at,
    _R.c.facets,
    _R.c.io_facets,
]


def _nulls(n: int) -> list[sa.ColumnElement[Any]]:
    return [sa.literal_column("NULL") for _ in range(n)]


def _run_page(the_job: sa.CTE) -> sa.CTE:
    """The keys of the page's runs, newest first (``limit``, ``offset`` bound at execution)."""
    r = _R
    # Only the keys, so ix_runs_job_created (job_uuid, created_at, uuid) answers the page by
    # itself, newest first. With the other run columns here the planner may walk
    # ix_runs_created and filter by job instead, reading every later run of every other job.
    # LIMIT and OFFSET are written into the SQL: with them as parameters PostgreSQL's generic
    # plan assumes a tenth of the job's runs, always costs more than a plan for the values,
    # and so is never reused; with them in the text the plan is made once per connection.
    return (
        sa.select(r.c.uuid, r.c.created_at)
        .where(r.c.job_uuid == sa.select(the_job.c.uuid).scalar_subquery())
        .order_by(r.c.created_at.desc(), r.c.uuid.desc())
        .limit(sa.bindparam("limit", type_=sa.Integer(), literal_execute=True))
        .offset(sa.bindparam("offset", type_=sa.Integer(), literal_execute=True))
        .cte("page")
    )


def _page_runs(page: sa.CTE) -> sa.Select[Any]:
    """``R`` rows: each run of the page with its columns; this branch types the union."""
    r = _R

    def typed_null(t: sa.types.TypeEngine[Any], name: str) -> sa.Label[Any]:
        # Typed in the first branch: PostgreSQL types a UNION column from left to right.
        return sa.cast(sa.null(), t).label(name)

    return sa.select(
        sa.literal_column("'R'").label("kind"),
        page.c.created_at.label("at"),
        page.c.uuid.label("run_uuid"),
        *_PAGE_RUN_COLS,
        typed_null(sa.String(), "namespace"),
        typed_null(sa.String(), "name"),
        typed_null(sa.String(), "version"),
        typed_null(sa.BigInteger(), "total"),
    ).join_from(page, r, r.c.uuid == page.c.uuid)


def _page_versions(page: sa.CTE, kind: Literal["I", "O"], *, lateral: bool) -> sa.Select[Any]:
    """``I`` or ``O`` rows: one input or output version of a run of the page."""
    dv, d = _VERSIONS, _DATASETS
    # Versions carry no time, so none is converted: they sort by run, then dataset name.
    versions = sa.select(d.c.namespace, d.c.name, dv.c.uuid).select_from(
        dv.join(d, d.c.uuid == dv.c.dataset_uuid)
    )
    run_uuid: sa.ColumnElement[Any] = dv.c.run_uuid
    if kind == "I":
        versions, read = bound.join_read(versions, version=dv.c.uuid)
        run_uuid = read.run
    if lateral:
        # Looked up run by run through the indexes. Joined as sets, PostgreSQL may plan a
        # page of a few runs as a scan of every run's inputs and outputs while its
        # statistics lag behind a store that grew a moment ago (seen after an ingest:
        # 1.1 of a read's 2.9 ms). SQLite has no LATERAL, and always looks up by index.
        # OFFSET 0 keeps the subquery from being pulled up into a join of sets again.
        found: Any = (
            versions.where(run_uuid == page.c.uuid)
            .offset(sa.literal_column("0"))
            .lateral(kind.lower())
        )
        source = page.join(found, sa.true())
    else:
        found = versions.add_columns(run_uuid.label("run_uuid")).subquery(kind.lower())
        source = page.join(found, found.c.run_uuid == page.c.uuid)
    return sa.select(
        sa.literal_column(f"'{kind}'"),
        *_nulls(1),
        page.c.uuid,
        *_nulls(len(_PAGE_RUN_COLS)),
        found.c.namespace,
        found.c.name,
        found.c.uuid,
        *_nulls(1),
    ).select_from(source)


def _job_total(the_job: sa.CTE) -> sa.Select[Any]:
    """The ``T`` row: the job with its run count."""
    with_count, run_count = run_counts.join_run_count(the_job, the_job.c.uuid)
    return sa.select(
        sa.literal_column("'T'"),
        *_nulls(2 + len(_PAGE_RUN_COLS)),
        the_job.c.namespace,
        the_job.c.name,
        the_job.c.uuid,
        run_count,
    ).select_from(with_count)


_J = job_rows.relation()
_JOB_BY_UUID = sa.select(_J.c.uuid, _J.c.namespace, _J.c.name).where(
    _J.c.uuid == sa.bindparam("job", type_=sa.String())
)
_BY_FQN = _job_by_fqn(
    sa.bindparam("namespace", type_=sa.String()), sa.bindparam("name", type_=sa.String())
)
# By whether the dialect has LATERAL (PostgreSQL does, SQLite does not).
_LIST_RUNS = {
    lateral: _list_runs_select(_JOB_BY_UUID, lateral=lateral) for lateral in (True, False)
}
_LIST_RUNS_BY_FQN = {
    lateral: _list_runs_select(_BY_FQN, lateral=lateral) for lateral in (True, False)
}


def list_runs(conn: Connection, job_uuid: str, limit: int, offset: int) -> Page[Run]:
    params = {"job": job_uuid, "limit": limit, "offset": offset}
    page = _runs_page(conn.execute(_LIST_RUNS[_lateral(conn)], params).all())
    return page if page is not None else Page([], 0)


def list_partition_runs(
    conn: Connection, job_uuid: str, key: Mapping[str, Sequence[str]], limit: int, offset: int
) -> Page[Run]:
    """The runs of a partitioned transform's job for the partitions matching ``key`` (each
    column named has one of its values), newest first."""
    ordered, total = stored_runs.partition_page(conn, job_uuid, key, limit, offset)
    found = runs_by_uuid(conn, ordered)
    return Page([found[u] for u in ordered if u in found], total)


def job_partition_columns(conn: Connection, job_uuid: str) -> list[str]:
    """The partition columns of a partitioned transform's job, from its latest partition
    run's key (none for any other job)."""
    key = stored_runs.newest_partition_key(conn, job_uuid)
    return [part.split("=", 1)[0] for part in key.split("/")] if key else []


def list_job_runs(
    conn: Connection, namespace: str, name: str, limit: int, offset: int
) -> Page[Run] | None:
    """The runs of the job whose FQN is ``name``; ``None`` if no job has it (see resolve_job)."""
    params = {"namespace": namespace, "name": name, "limit": limit, "offset": offset}
    return _runs_page(conn.execute(_LIST_RUNS_BY_FQN[_lateral(conn)], params).all())


def _lateral(conn: Connection) -> bool:
    return conn.dialect.name == "postgresql"


def _runs_page(rows: Iterable[Sequence[Any]]) -> Page[Run] | None:
    inputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    outputs: dict[str, list[DatasetVersionRef]] = defaultdict(list)
    page: list[Sequence[Any]] = []
    job: Sequence[Any] | None = None
    # By position: SQLAlchemy's by-name row access costs more than the rest of this loop.
    for x in rows:
        kind = x[0]
        if kind == "R":
            page.append(x)
        elif kind == "T":
            job = x
        else:
            into = inputs if kind == "I" else outputs
            into[x[2]].append(DatasetVersionRef(x[13], x[14], x[15]))
    if job is None:
        return None
    job_namespace, job_name, job_uuid, total = job[13:17]
    runs = [
        Run(
            uuid,
            job_uuid,
            job_namespace,
            job_name,
            job_version_uuid,
            parent_run_uuid,
            state,
            created_at,
            updated_at,
            nominal_start_time,
            nominal_end_time,
            started_at,
            ended_at,
            dict(facets or {}),
            inputs.get(uuid, []),
            outputs.get(uuid, []),
            dict(io_facets or {}),
        )
        for (
            _,
            created_at,
            uuid,
            job_version_uuid,
            parent_run_uuid,
            state,
            updated_at,
            nominal_start_time,
            nominal_end_time,
            started_at,
            ended_at,
            facets,
            io_facets,
            *_,
        ) in page
    ]
    return Page(runs, int(total or 0))


def run_job_facets(conn: Connection, run_id: str) -> dict[str, Any]:
    """The job facets the run's own events sent, a later event's (by event time) over an
    earlier one's, as Marquez answers ``?type=job``: a past run keeps the SQL it ran,
    whatever the job's later edits. A run no event sent job facets for has none."""
    get_run(conn, run_id)  # NotFound for an unknown run
    out: dict[str, Any] = {}
    for payload in stored_events.payloads_of_run(conn, run_id):
        job = payload.get("job") if isinstance(payload, dict) else None
        facets = job.get("facets") if isinstance(job, dict) else None
        if isinstance(facets, dict):
            out.update(facets)
    return out
