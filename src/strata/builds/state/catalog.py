"""The build catalog: for each lake dataset version, the run that made it, that run's
program version and the exact input versions it read.

There is no second database: a catalog entry is the lake commit (``dataset_versions``,
whose ``run_uuid`` the commit records), the run's job version (the program version) and
its ``run_inputs``. A whole namespace's current entries are read in two statements,
whatever its size.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.builds.state import build_reads, programs
from strata.builds.state.build_reads import BuildRead
from strata.store.bulk import chunks
from strata.store.fetch import plain_rows
from strata.store.owners import branches as stored_branches
from strata.store.owners.branches import MAIN
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import transactions as txns
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


@dataclass(frozen=True, slots=True)
class BuiltFrom:
    """One input version a run read."""

    commit_id: int | None
    data_fingerprint: str | None


@dataclass(frozen=True, slots=True)
class Current:
    """A lake dataset's current version and, when a build made it, how."""

    dataset: str
    commit_id: int
    data_fingerprint: str | None
    run: str | None
    job: str | None
    program: str | None
    ordinal: int | None
    inputs: dict[str, BuiltFrom] = field(default_factory=dict)


_D, _DV = _DATASETS, _VERSIONS
_PRODUCER = _DV.c.run_uuid


def _of_current(
    q: sa.Select[Any],
    namespace: str,
    names: Collection[str] | None,
    versions: Collection[str] | None = None,
) -> sa.Select[Any]:
    """``q`` over the lake datasets of ``namespace`` (or ``names``) and their current
    versions (with ``versions``: those versions of theirs instead, a branch's)."""
    if versions is None:
        held = _DV.c.uuid == _D.c.current_version_uuid
    else:
        held = sa.and_(_DV.c.dataset_uuid == _D.c.uuid, _DV.c.uuid.in_(sorted(versions)))
    q = (
        q.select_from(_D)
        .join(_DV, held)
        .where(_D.c.namespace == namespace, _D.c.is_lake.is_(True), _D.c.deleted_at.is_(None))
    )
    return q.where(_D.c.name.in_(sorted(names))) if names is not None else q


def _current_rows(
    namespace: str, names: Collection[str] | None, versions: Collection[str] | None = None
) -> sa.Select[Any]:
    # The program version (its uuid is the run's job version) names the job and the
    # fingerprint: a run of another producer has none, and counts as no build.
    r, pv = stored_runs.relation(), programs.relation()
    columns = sa.select(
        _D.c.name,
        _D.c.uuid,
        _DV.c.commit_id,
        _DV.c.data_fingerprint,
        _PRODUCER.label("run"),
        pv.c.job_name,
        pv.c.fingerprint,
        pv.c.ordinal,
    )
    return (
        _of_current(columns, namespace, names, versions)
        .outerjoin(r, r.c.uuid == _PRODUCER)
        .outerjoin(pv, pv.c.uuid == r.c.job_version_uuid)
    )


def _input_rows(
    namespace: str, names: Collection[str] | None, versions: Collection[str] | None = None
) -> sa.Select[Any]:
    # The input's dataset comes as its uuid: the current rows name nearly all of them,
    # which spares a lookup of each input version's dataset row.
    iv = stored_versions.relation("iv")
    columns = sa.select(_D.c.name, iv.c.dataset_uuid, iv.c.commit_id, iv.c.data_fingerprint)
    q, read = bound.join_read(_of_current(columns, namespace, names, versions), run=_PRODUCER)
    return q.join(iv, iv.c.uuid == read.version)


def load_current(
    conn: Connection, namespace: str, names: Collection[str] | None = None, branch_id: str = MAIN
) -> dict[str, Current]:
    """Current versions with their catalog entries: every lake dataset, or ``names``; on
    a branch, the versions it reads (its own, else its parents', else main's)."""
    out = _load_current(conn, namespace, names, None)
    if branch_id != MAIN:
        held = stored_branches.overlay(conn, branch_id)
        if held:
            out.update(_load_current(conn, namespace, names, held.values()))
    return out


def _load_current(
    conn: Connection,
    namespace: str,
    names: Collection[str] | None,
    versions: Collection[str] | None,
) -> dict[str, Current]:
    out: dict[str, Current] = {}
    named: dict[str, str] = {}
    for name, uuid, cid, fp, run, job, program, ordinal in plain_rows(
        conn, _current_rows(namespace, names, versions)
    ):
        out[name] = Current(name, int(cid), fp, run, job, program, ordinal, {})
        named[uuid] = name
    rows = plain_rows(conn, _input_rows(namespace, names, versions))
    named.update(_dataset_names(conn, {r[1] for r in rows} - named.keys()))
    for name, input_uuid, cid, fp in rows:
        cur = out.get(name)
        if cur is not None:
            cur.inputs[named[input_uuid]] = BuiltFrom(int(cid) if cid is not None else None, fp)
    return out


def _dataset_names(conn: Connection, uuids: Collection[str]) -> dict[str, str]:
    """``uuid -> name`` of datasets the current rows did not name (inputs from outside
    the namespace's lake, or deleted since they were read)."""
    out: dict[str, str] = {}
    for batch in chunks(sorted(uuids)):
        out.update(conn.execute(sa.select(_D.c.uuid, _D.c.name).where(_D.c.uuid.in_(batch))).all())
    return out


@dataclass(frozen=True)
class VersionEntry:
    """One committed version of a lake dataset with the run and program that made it."""

    version: int
    committed_at: datetime
    type: str | None
    rows: int | None
    data_fingerprint: str | None
    run: str | None
    state: str | None
    job: str | None
    ordinal: int | None
    fingerprint: str | None
    build: BuildRead | None = None  # how its run read its inputs
    partitions: dict[str, Any] | None = None  # what it did to which partition (and by which run)
    purged_at: datetime | None = None  # retention purged its data (by policy ``purged_by``)
    purged_by: str | None = None
    branch: str = "main"  # the branch it belongs to
    branch_id: str = MAIN


def version_entries(conn: Connection, dataset_uuid: str) -> list[VersionEntry]:
    """Every committed version of one lake dataset, oldest first."""
    dv, t, r = _VERSIONS, txns.relation(), stored_runs.relation()
    pv, b = programs.relation(), stored_branches.relation()
    rows = conn.execute(
        sa.select(
            dv.c.commit_id,
            dv.c.created_at,
            t.c.type,
            dv.c.row_count,
            dv.c.data_fingerprint,
            dv.c.run_uuid,
            r.c.state,
            pv.c.job_name,
            pv.c.ordinal,
            pv.c.fingerprint,
            r.c.facets.label("run_facets"),
            dv.c.partitions,
            dv.c.purged_at,
            dv.c.purged_by,
            sa.func.coalesce(b.c.name, dv.c.branch_id).label("branch"),
            dv.c.branch_id,
        )
        .select_from(dv)
        .outerjoin(b, b.c.id == dv.c.branch_id)
        .outerjoin(t, t.c.uuid == dv.c.transaction_uuid)
        .outerjoin(r, r.c.uuid == dv.c.run_uuid)
        .outerjoin(pv, pv.c.uuid == r.c.job_version_uuid)
        .where(dv.c.dataset_uuid == dataset_uuid, dv.c.commit_id.is_not(None))
        .order_by(dv.c.commit_id)
    ).all()
    return [
        VersionEntry(
            int(x.commit_id),
            x.created_at,
            x.type,
            x.row_count,
            x.data_fingerprint,
            x.run_uuid,
            x.state,
            x.job_name,
            int(x.ordinal) if x.ordinal is not None else None,
            x.fingerprint,
            build_reads.parse(dict(x.run_facets or {})),
            x.partitions,
            x.purged_at,
            x.purged_by,
            x.branch,
            x.branch_id,
        )
        for x in rows
    ]


def purged(conn: Connection, version_uuids: Collection[str]) -> dict[str, tuple[datetime, str]]:
    """``version uuid -> (purged at, policy)`` of those of ``version_uuids`` retention
    purged."""
    dv = _VERSIONS.c
    out: dict[str, tuple[datetime, str]] = {}
    for part in chunks(sorted(version_uuids), 500):
        rows = conn.execute(
            sa.select(dv.uuid, dv.purged_at, dv.purged_by).where(
                dv.uuid.in_(part), dv.purged_at.is_not(None)
            )
        )
        out.update({x.uuid: (x.purged_at, x.purged_by) for x in rows})
    return out


def run_inputs(conn: Connection, runs: Collection[str]) -> dict[str, dict[str, int | None]]:
    """For each run, the exact versions it read: ``{dataset: commit id}``."""
    if not runs:
        return {}
    iv, d = _VERSIONS, _DATASETS
    out: dict[str, dict[str, int | None]] = defaultdict(dict)
    q = sa.select(d.c.name, iv.c.commit_id).select_from(iv).join(d, d.c.uuid == iv.c.dataset_uuid)
    q, read = bound.join_read(q, version=iv.c.uuid)
    rows = conn.execute(
        q.add_columns(read.run).where(read.run.in_(sorted(runs))).order_by(d.c.name)
    )
    for x in rows:
        out[x.run_uuid][x.name] = int(x.commit_id) if x.commit_id is not None else None
    return dict(out)


def producer(conn: Connection, version_uuid: str) -> tuple[str | None, str | None, str | None]:
    """``(run, its job version, the version's data fingerprint)`` of one version."""
    dv, r = _VERSIONS, stored_runs.relation()
    row = conn.execute(
        sa.select(dv.c.run_uuid, r.c.job_version_uuid, dv.c.data_fingerprint)
        .select_from(dv)
        .outerjoin(r, r.c.uuid == dv.c.run_uuid)
        .where(dv.c.uuid == version_uuid)
    ).first()
    if row is None:
        return None, None, None
    return row.run_uuid, row.job_version_uuid, row.data_fingerprint


def made_without_run(conn: Connection, namespace: str) -> set[str]:
    """The lake datasets whose current version no run made (one statement, and no input
    rows: a pipeline load checks its outputs against it)."""
    q = _of_current(sa.select(_D.c.name), namespace, None).where(_DV.c.run_uuid.is_(None))
    return set(conn.execute(q).scalars())


def hand_written(conn: Connection, namespace: str, names: Collection[str]) -> list[str]:
    """Those of ``names`` whose every committed transaction was made by hand (no run)."""
    if not names:
        return []
    d, t = _DATASETS, txns.relation()
    return list(
        conn.execute(
            sa.select(d.c.name)
            .join(t, sa.and_(t.c.dataset_uuid == d.c.uuid, t.c.state == "COMMITTED"))
            .where(d.c.namespace == namespace, d.c.name.in_(sorted(names)))
            .group_by(d.c.name)
            .having(sa.func.count(t.c.run_uuid) == 0)
            .order_by(d.c.name)
        ).scalars()
    )


def dataset_uuids(conn: Connection, namespace: str, names: Collection[str]) -> dict[str, str]:
    """``name -> uuid`` of the lake datasets of ``namespace`` among ``names``."""
    out: dict[str, str] = {}
    for batch in chunks(sorted(names)):
        out.update(
            conn.execute(
                sa.select(_D.c.name, _D.c.uuid).where(
                    _D.c.namespace == namespace, _D.c.is_lake.is_(True), _D.c.name.in_(batch)
                )
            ).all()
        )
    return out


def reads_of_runs(conn: Connection, runs: Collection[str]) -> dict[str, BuildRead]:
    """``run -> how it read its inputs``, for the runs the build made."""
    out: dict[str, BuildRead] = {}
    for run, detail in stored_runs.details(conn, runs).items():
        found = build_reads.parse(detail.facets)
        if found is not None:
            out[run] = found
    return out
