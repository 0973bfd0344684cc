"""Runs whose builder died: ended ABORTED, with the reason, once their lease is gone.

A transform runs under a lease its builder renews; a builder killed mid-run leaves the
run RUNNING in lineage. Whoever next takes the transform's lease (a builder about to run
it, or a worker retaking a dead worker's trigger) holds it alone, so any run of that
transform still RUNNING is an orphan: it is ended with an ABORT event, and so is its
build's parent run once none of its children runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from strata.builds.events import Emitter, JobRef, RunSpec, run_event
from strata.errors import RunAbandoned
from strata.store import schema as s
from strata.store.engine import read_tx, write_tx


def reap_expired_leases(engine: Engine, emitter: Emitter, namespace: str) -> list[str]:
    """Drop leases whose holder stopped renewing them and end those transforms' orphaned
    runs; the runs ended."""
    bl = s.build_leases
    with write_tx(engine) as conn:
        expired = bl.c.expires_at < datetime.now(UTC)
        names: list[str] = list(conn.execute(sa.select(bl.c.name).where(expired)).scalars())
        if names:
            conn.execute(bl.delete().where(expired, bl.c.name.in_(names)))
    return abort_orphaned_runs(engine, emitter, namespace, names) if names else []


def abort_orphaned_runs(
    engine: Engine, emitter: Emitter, namespace: str, transforms: Sequence[str]
) -> list[str]:
    """End every RUNNING run of ``transforms`` (whose leases the caller holds or just
    freed) and their parents left with no running child; the run ids ended."""
    r, j = s.runs, s.jobs
    parent, parent_job = r.alias("parent"), j.alias("parent_job")
    query = (
        sa.select(
            r.c.uuid,
            j.c.name,
            parent.c.uuid.label("parent"),
            parent.c.state.label("parent_state"),
            parent_job.c.name.label("pj"),
        )
        .join(j, j.c.uuid == r.c.job_uuid)
        .outerjoin(parent, parent.c.uuid == r.c.parent_run_uuid)
        .outerjoin(parent_job, parent_job.c.uuid == parent.c.job_uuid)
        .where(j.c.namespace == namespace, j.c.name.in_(list(transforms)), r.c.state == "RUNNING")
    )
    with read_tx(engine) as conn:
        orphans = conn.execute(query).all()
    why = RunAbandoned(
        "the builder running this transform stopped before the run ended (its lease "
        "expired); the next build runs it again"
    )
    ended: list[str] = []
    parents: dict[str, str] = {}
    for row in orphans:
        up = (str(row.parent), JobRef(namespace, str(row.pj))) if row.parent else None
        spec = RunSpec(str(row.uuid), JobRef(namespace, str(row.name)), up)
        emitter.emit(run_event("ABORT", spec, namespace=namespace, error=why))
        ended.append(str(row.uuid))
        if row.parent is not None and row.parent_state == "RUNNING":
            parents[str(row.parent)] = str(row.pj)
    for run_id, job in parents.items():
        if not _running_children(engine, run_id):
            spec = RunSpec(run_id, JobRef(namespace, job))
            emitter.emit(run_event("ABORT", spec, namespace=namespace, error=why))
            ended.append(run_id)
    return ended


def _running_children(engine: Engine, run_id: str) -> bool:
    r = s.runs
    with read_tx(engine) as conn:
        found = conn.execute(
            sa.select(r.c.uuid).where(r.c.parent_run_uuid == run_id, r.c.state == "RUNNING")
        ).first()
    return found is not None
