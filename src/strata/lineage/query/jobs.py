"""Jobs, their versions (program versions), and jobs named by an old or simple name."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query.common import DatasetRef, Page, chunks
from strata.lineage.query.namespaces import get_namespace
from strata.lineage.query.runs import Run, _job_by_fqn, runs_by_uuid
from strata.store.owners import tags
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import aliases as job_aliases
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

_J = job_rows.relation()
_JOBS = sa.select(*[c for c in _J.c if c.name != "fold_state"])

# --- jobs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    uuid: str
    namespace: str
    name: str
    simple_name: str
    parent_job_uuid: str | None
    parent_job_name: str | None
    type: str
    location: str | None
    description: str | None
    facets: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    current_version: str | None
    inputs: list[DatasetRef]
    outputs: list[DatasetRef]
    tags: list[str]
    latest_run: Run | None


def _io_by_version(
    conn: Connection, version_uuids: Iterable[str]
) -> dict[str, tuple[list[DatasetRef], list[DatasetRef]]]:
    out: dict[str, tuple[list[DatasetRef], list[DatasetRef]]] = defaultdict(lambda: ([], []))
    io, d = versions_of.io_relation(), _DATASETS
    for batch in chunks(set(version_uuids)):
        for x in conn.execute(
            sa.select(io.c.job_version_uuid, io.c.io_type, d.c.namespace, d.c.name)
            .join(d, d.c.uuid == io.c.dataset_uuid)
            .where(io.c.job_version_uuid.in_(batch))
            .order_by(d.c.namespace, d.c.name)
        ).all():
            pair = out[x.job_version_uuid]
            (pair[0] if x.io_type == "INPUT" else pair[1]).append(DatasetRef(x.namespace, x.name))
    return out


def _latest_runs(
    conn: Connection, rows: Sequence[sa.Row[Any]], fallback: bool = True
) -> dict[str, Run]:
    """job uuid -> latest run: the current version's latest run, else the newest run."""
    jv = versions_of.relation()
    latest: dict[str, str] = {}
    cur = {r.current_version_uuid: r.uuid for r in rows if r.current_version_uuid}
    for batch in chunks(cur):
        for x in conn.execute(
            sa.select(jv.c.uuid, jv.c.latest_run_uuid).where(jv.c.uuid.in_(batch))
        ).all():
            if x.latest_run_uuid:
                latest[cur[x.uuid]] = x.latest_run_uuid
    # One indexed LIMIT 1 per job without a recorded latest run: fine for a page, not a graph.
    for row in rows if fallback else ():
        if row.uuid not in latest:
            newest = stored_runs.newest(conn, 1, job_uuid=row.uuid)
            if newest:
                latest[row.uuid] = newest[0]
    runs = runs_by_uuid(conn, latest.values())
    return {job: runs[rid] for job, rid in latest.items() if rid in runs}


def jobs_from_rows(
    conn: Connection,
    rows: Sequence[sa.Row[Any]],
    with_latest_run: bool = True,
    latest_fallback: bool = True,
    with_io: bool = True,
) -> list[Job]:
    io = (
        _io_by_version(conn, [r.current_version_uuid for r in rows if r.current_version_uuid])
        if with_io
        else {}
    )
    parents: dict[str, str] = {}
    j = job_rows.relation()
    for batch in chunks({r.parent_job_uuid for r in rows if r.parent_job_uuid}):
        for x in conn.execute(sa.select(j.c.uuid, j.c.name).where(j.c.uuid.in_(batch))).all():
            parents[x.uuid] = x.name
    job_tags = tags.of_jobs(conn, [r.uuid for r in rows])
    latest = _latest_runs(conn, rows, latest_fallback) if with_latest_run else {}
    out = []
    for r in rows:
        ins, outs = io.get(r.current_version_uuid, ([], [])) if r.current_version_uuid else ([], [])
        out.append(
            Job(
                uuid=r.uuid,
                namespace=r.namespace,
                name=r.name,
                simple_name=r.simple_name,
                parent_job_uuid=r.parent_job_uuid,
                parent_job_name=parents.get(r.parent_job_uuid) if r.parent_job_uuid else None,
                type=r.type,
                location=r.location,
                description=r.description,
                facets=dict(r.facets or {}),
                created_at=r.created_at,
                updated_at=r.updated_at,
                current_version=r.current_version_uuid,
                inputs=ins,
                outputs=outs,
                tags=sorted(job_tags.get(r.uuid, [])),
                latest_run=latest.get(r.uuid),
            )
        )
    return out


def jobs_by_uuid(
    conn: Connection,
    uuids: Iterable[str],
    with_latest_run: bool = True,
    latest_fallback: bool = True,
    with_io: bool = True,
) -> dict[str, Job]:
    rows: list[sa.Row[Any]] = []
    for batch in chunks(set(uuids)):
        rows.extend(conn.execute(_JOBS.where(_J.c.uuid.in_(batch))).all())
    return {
        j.uuid: j for j in jobs_from_rows(conn, rows, with_latest_run, latest_fallback, with_io)
    }


def get_job(conn: Connection, job_uuid: str) -> Job:
    job = jobs_by_uuid(conn, [job_uuid]).get(job_uuid)
    if job is None:
        raise NotFound(f"job {job_uuid!r} not found", job=job_uuid)
    return job


def child_jobs(conn: Connection, job_uuid: str, limit: int = 1000) -> list[tuple[str, str]]:
    """The visible jobs whose parent is this one, (namespace, name) by name."""
    j = job_rows.relation()
    rows = conn.execute(
        sa.select(j.c.namespace, j.c.name)
        .where(j.c.parent_job_uuid == job_uuid, j.c.is_hidden.is_(False))
        .order_by(j.c.namespace, j.c.name)
        .limit(limit)
    )
    return [(str(r.namespace), str(r.name)) for r in rows]


def list_jobs(
    conn: Connection,
    namespace: str | None,
    limit: int,
    offset: int,
    last_run_states: Sequence[str] = (),
) -> Page[Job]:
    """The visible jobs of ``namespace`` (None: of every namespace) by name; with
    ``last_run_states``, only those whose latest run is in one of them or that have no
    run (as Marquez filters). The total counts them all, as Marquez's does."""
    j, r = job_rows.relation(), stored_runs.relation()
    where: sa.ColumnElement[bool] = j.c.is_hidden.is_(False)
    if namespace is not None:
        get_namespace(conn, namespace)
        where = sa.and_(where, j.c.namespace == namespace)
    page = sa.select(j).where(where)
    if last_run_states:
        latest = (
            sa.select(r.c.state)
            .where(r.c.job_uuid == j.c.uuid)
            .order_by(r.c.created_at.desc(), r.c.uuid.desc())
            .limit(1)
            .scalar_subquery()
        )
        page = page.where(sa.or_(latest.in_(list(last_run_states)), latest.is_(None)))
    rows = conn.execute(page.order_by(j.c.namespace, j.c.name).limit(limit).offset(offset)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(j).where(where)).scalar_one()
    return Page(jobs_from_rows(conn, rows), total)


@dataclass(frozen=True)
class ProgramMoved:
    """A dataset whose current version was written by an older version of its job than
    the job's newest (a run with a new program started, or failed, since)."""

    namespace: str
    name: str
    job_namespace: str
    job_name: str
    written_by: str  # the run that wrote the current version
    old: JobVersionRef
    new: JobVersionRef
    newest_run: tuple[str, str]  # (run id, state) of the job's newest run: not completed


@dataclass(frozen=True)
class JobVersionRef:
    uuid: str
    fingerprint: str
    program_facets: list[str] | None
    created_at: datetime


def programs_moved_on(conn: Connection, lake_namespace: str) -> list[ProgramMoved]:
    """Every visible dataset outside the lake whose current version's run used another
    job version than the job's current one, where the current version's newest run has
    not completed (jobs Strata builds left out: the build service judges those).

    Found from the runs not completed (``ix_runs_unfinished``), so the cost follows the
    jobs that lag, not the size of the store."""
    lagging = _lagging_jobs(conn, lake_namespace)
    d, dv, r, j = _DATASETS, _VERSIONS, stored_runs.relation(), job_rows.relation()
    old, new = versions_of.relation("old"), versions_of.relation("new")
    rows: list[Any] = []
    for chunk in chunks(sorted(lagging)):
        rows += conn.execute(
            sa.select(
                d.c.namespace,
                d.c.name,
                j.c.uuid.label("job_uuid"),
                j.c.namespace.label("jns"),
                j.c.name.label("jname"),
                r.c.uuid.label("run"),
                *[c.label(f"old_{c.name}") for c in _ref_columns(old)],
                *[c.label(f"new_{c.name}") for c in _ref_columns(new)],
            )
            .select_from(r)
            .join(j, j.c.uuid == r.c.job_uuid)
            .join(dv, dv.c.run_uuid == r.c.uuid)
            .join(d, sa.and_(d.c.uuid == dv.c.dataset_uuid, d.c.current_version_uuid == dv.c.uuid))
            .join(old, old.c.uuid == r.c.job_version_uuid)
            .join(new, new.c.uuid == j.c.current_version_uuid)
            .where(
                r.c.job_uuid.in_(chunk),
                d.c.is_lake.is_(False),
                d.c.is_hidden.is_(False),
                r.c.job_version_uuid != j.c.current_version_uuid,
            )
        ).all()
    rows.sort(key=lambda x: (x.namespace, x.name))
    return [
        ProgramMoved(
            x.namespace,
            x.name,
            x.jns,
            x.jname,
            str(x.run),
            _ref(x, "old_"),
            _ref(x, "new_"),
            lagging[str(x.job_uuid)],
        )
        for x in rows
    ]


def _lagging_jobs(conn: Connection, lake_namespace: str) -> dict[str, tuple[str, str]]:
    """The visible jobs outside the lake whose current version's newest run (the job's
    newest) has not completed, with that run's id and state: driven by the partial index
    of such runs (a literal, not a parameter, so that its predicate is seen to hold)."""
    r, j, cur = stored_runs.relation(), job_rows.relation(), versions_of.relation("cur")
    found = conn.execute(
        sa.select(j.c.uuid, r.c.uuid, r.c.state)
        .select_from(r)
        .join(j, j.c.uuid == r.c.job_uuid)
        .join(cur, cur.c.uuid == j.c.current_version_uuid)
        .where(
            r.c.state != sa.literal_column("'COMPLETED'"),
            cur.c.latest_run_uuid == r.c.uuid,
            j.c.namespace != lake_namespace,
            j.c.is_hidden.is_(False),
        )
    )
    return {str(job): (str(run), str(state)) for job, run, state in found}


def _ref_columns(jv: Any) -> list[Any]:
    return [jv.c.uuid, jv.c.version, jv.c.program_facets, jv.c.created_at]


def _ref(row: Any, prefix: str) -> JobVersionRef:
    return JobVersionRef(
        str(row._mapping[f"{prefix}uuid"]),
        row._mapping[f"{prefix}version"],
        row._mapping[f"{prefix}program_facets"],
        row._mapping[f"{prefix}created_at"],
    )


def namespaces_of_job(conn: Connection, name: str) -> list[str]:
    """The namespaces where a visible job is called ``name``."""
    j = job_rows.relation()
    found = conn.execute(
        sa.select(j.c.namespace).where(j.c.name == name, j.c.is_hidden.is_(False)).distinct()
    )
    return sorted(found.scalars())


@dataclass(frozen=True)
class JobResolution:
    """How a ``(namespace, name)`` in a URL maps to jobs."""

    kind: Literal["found", "moved", "ambiguous"]
    job_uuid: str | None = None
    namespace: str | None = None
    name: str | None = None
    candidates: list[tuple[str, str]] = field(default_factory=list)


def resolve_job(conn: Connection, namespace: str, name: str) -> JobResolution:
    """Find a job by its FQN, else by an old name or its simple name (to redirect)."""
    j = job_rows.relation()
    visible = j.c.is_hidden.is_(False)  # soft-deleted jobs answer 404, as in Marquez
    hit = conn.execute(_job_by_fqn(namespace, name)).first()
    if hit is not None:
        return JobResolution("found", hit.uuid, namespace, name)
    found = conn.execute(
        sa.select(j.c.uuid, j.c.namespace, j.c.name).where(
            j.c.uuid.in_(job_aliases.named(namespace, name)), visible
        )
    ).all()
    if not found:
        found = conn.execute(
            sa.select(j.c.uuid, j.c.namespace, j.c.name)
            .where(j.c.namespace == namespace, j.c.simple_name == name, visible)
            .order_by(j.c.name)
            .limit(50)
        ).all()
    unique = sorted({(f.namespace, f.name, f.uuid) for f in found})
    if len(unique) == 1:
        ns, fqn, uuid = unique[0]
        return JobResolution("moved", uuid, ns, fqn)
    if len(unique) > 1:
        return JobResolution("ambiguous", candidates=[(ns, fqn) for ns, fqn, _ in unique])
    raise NotFound(
        f"job {name!r} not found in namespace {namespace!r}", namespace=namespace, job=name
    )


@dataclass(frozen=True)
class JobVersion:
    uuid: str
    version: str
    job_namespace: str
    job_name: str
    location: str | None
    source_code: str | None
    created_at: datetime
    updated_at: datetime
    inputs: list[DatasetRef]
    outputs: list[DatasetRef]
    latest_run: Run | None
    program_facets: list[str] | None  # None: recorded before Strata kept it


def _job_versions_from_rows(
    conn: Connection, job: Job, rows: Sequence[sa.Row[Any]]
) -> list[JobVersion]:
    io = _io_by_version(conn, [r.uuid for r in rows])
    runs = runs_by_uuid(conn, [r.latest_run_uuid for r in rows if r.latest_run_uuid])
    return [
        JobVersion(
            uuid=r.uuid,
            version=r.version,
            job_namespace=job.namespace,
            job_name=job.name,
            location=r.location,
            source_code=r.source_code,
            created_at=r.created_at,
            updated_at=r.updated_at,
            inputs=io.get(r.uuid, ([], []))[0],
            outputs=io.get(r.uuid, ([], []))[1],
            latest_run=runs.get(r.latest_run_uuid) if r.latest_run_uuid else None,
            program_facets=r.program_facets,
        )
        for r in rows
    ]


def list_job_versions(conn: Connection, job_uuid: str, limit: int, offset: int) -> Page[JobVersion]:
    job = get_job(conn, job_uuid)
    jv = versions_of.relation()
    rows = conn.execute(
        sa.select(jv)
        .where(jv.c.job_uuid == job_uuid)
        .order_by(jv.c.created_at.desc(), jv.c.uuid.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    total = conn.execute(
        sa.select(sa.func.count()).select_from(jv).where(jv.c.job_uuid == job_uuid)
    ).scalar_one()
    return Page(_job_versions_from_rows(conn, job, rows), total)


def get_job_version(conn: Connection, job_uuid: str, version: str) -> JobVersion:
    """A job version by its id or by its fingerprint."""
    job = get_job(conn, job_uuid)
    jv = versions_of.relation()
    row = conn.execute(
        sa.select(jv).where(
            jv.c.job_uuid == job_uuid, sa.or_(jv.c.uuid == version.lower(), jv.c.version == version)
        )
    ).first()
    if row is None:
        raise NotFound(
            f"version {version!r} of job {job.name!r} not found",
            namespace=job.namespace,
            job=job.name,
            version=version,
        )
    return _job_versions_from_rows(conn, job, [row])[0]
