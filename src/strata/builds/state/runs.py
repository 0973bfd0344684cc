"""The build's own runs as the lineage fold recorded them: which are still RUNNING, with
the build run each hangs on."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.runs import rows as stored_runs


@dataclass(frozen=True)
class Running:
    """A RUNNING run of a transform, with its parent run (the build) if it has one."""

    run: str
    transform: str
    parent: str | None
    parent_job: str | None
    parent_running: bool


def running(conn: Connection, namespace: str, transforms: Collection[str]) -> list[Running]:
    """Every RUNNING run of ``transforms``."""
    r, j = stored_runs.relation(), job_rows.relation()
    parent, parent_job = stored_runs.relation("parent"), j.alias("parent_job")
    rows = conn.execute(
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
        .where(j.c.namespace == namespace, j.c.name.in_(sorted(transforms)), r.c.state == "RUNNING")
    ).all()
    return [
        Running(
            str(x.uuid),
            str(x.name),
            str(x.parent) if x.parent is not None else None,
            str(x.pj) if x.pj is not None else None,
            x.parent_state == "RUNNING",
        )
        for x in rows
    ]
