"""The build catalog as the build side reads it: for each lake dataset, its current
version, the run that made it, that run's program version and the exact input versions.

There is no second database: a catalog entry is the lake commit (``dataset_versions``)
with its producing run (``run_uuid``, or the transaction's run while the run's closing
event is not folded yet), the run's job version (the program version) and its
``run_inputs``. The whole namespace is read in two statements, whatever its size.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import schema as s


@dataclass(frozen=True)
class BuiltFrom:
    """One input version a run read."""

    commit_id: int | None
    data_fingerprint: str | None


@dataclass(frozen=True)
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


def _producer(dv: Any, t: Any) -> Any:
    return sa.func.coalesce(dv.c.run_uuid, t.c.run_uuid)


def _current_rows(namespace: str, names: Collection[str] | None) -> sa.Select[Any]:
    d, dv, t = s.datasets, s.dataset_versions, s.transactions
    r, jv, pv, j = s.runs, s.job_versions, s.program_versions, s.jobs
    q = (
        sa.select(
            d.c.name,
            dv.c.commit_id,
            dv.c.data_fingerprint,
            _producer(dv, t).label("run"),
            j.c.name.label("job"),
            jv.c.version.label("program"),
            pv.c.ordinal,
        )
        .select_from(d)
        .join(dv, dv.c.uuid == d.c.current_version_uuid)
        .outerjoin(t, t.c.uuid == dv.c.transaction_uuid)
        .outerjoin(r, r.c.uuid == _producer(dv, t))
        .outerjoin(jv, jv.c.uuid == r.c.job_version_uuid)
        .outerjoin(pv, pv.c.uuid == r.c.job_version_uuid)
        .outerjoin(j, j.c.uuid == r.c.job_uuid)
        .where(d.c.namespace == namespace, d.c.is_lake.is_(True), d.c.deleted_at.is_(None))
    )
    return q.where(d.c.name.in_(sorted(names))) if names is not None else q


def _input_rows(namespace: str, names: Collection[str] | None) -> sa.Select[Any]:
    d, dv, t, ri = s.datasets, s.dataset_versions, s.transactions, s.run_inputs
    ind, iv = s.datasets.alias("ind"), s.dataset_versions.alias("iv")
    q = (
        sa.select(d.c.name, ind.c.name.label("input"), iv.c.commit_id, iv.c.data_fingerprint)
        .select_from(d)
        .join(dv, dv.c.uuid == d.c.current_version_uuid)
        .outerjoin(t, t.c.uuid == dv.c.transaction_uuid)
        .join(ri, ri.c.run_uuid == _producer(dv, t))
        .join(iv, iv.c.uuid == ri.c.dataset_version_uuid)
        .join(ind, ind.c.uuid == iv.c.dataset_uuid)
        .where(d.c.namespace == namespace, d.c.is_lake.is_(True), d.c.deleted_at.is_(None))
    )
    return q.where(d.c.name.in_(sorted(names))) if names is not None else q


def load_current(
    conn: Connection, namespace: str, names: Collection[str] | None = None
) -> dict[str, Current]:
    """Current versions with their catalog entries: every lake dataset, or ``names``."""
    out: dict[str, Current] = {}
    for row in conn.execute(_current_rows(namespace, names)):
        out[row.name] = Current(
            dataset=row.name,
            commit_id=int(row.commit_id),
            data_fingerprint=row.data_fingerprint,
            run=row.run,
            job=row.job,
            program=row.program,
            ordinal=row.ordinal,
        )
    for row in conn.execute(_input_rows(namespace, names)):
        cur = out.get(row.name)
        if cur is not None:
            cid = int(row.commit_id) if row.commit_id is not None else None
            cur.inputs[row.input] = BuiltFrom(cid, row.data_fingerprint)
    return out


def program_ordinals(conn: Connection, namespace: str) -> dict[tuple[str, str], int]:
    """``(job name, fingerprint) -> ordinal`` of every program version registered."""
    pv = s.program_versions
    rows = conn.execute(
        sa.select(pv.c.job_name, pv.c.fingerprint, pv.c.ordinal).where(pv.c.namespace == namespace)
    )
    return {(r.job_name, r.fingerprint): int(r.ordinal) for r in rows}


def version_fingerprints(
    conn: Connection, namespace: str, wanted: Collection[tuple[str, int]]
) -> dict[tuple[str, int], str | None]:
    """Data fingerprints of some ``(dataset, commit id)`` versions (pinned inputs)."""
    if not wanted:
        return {}
    d, dv = s.datasets, s.dataset_versions
    names = sorted({n for n, _ in wanted})
    rows = conn.execute(
        sa.select(d.c.name, dv.c.commit_id, dv.c.data_fingerprint)
        .join(dv, dv.c.dataset_uuid == d.c.uuid)
        .where(d.c.namespace == namespace, d.c.name.in_(names), dv.c.commit_id.is_not(None))
    )
    return {
        (r.name, int(r.commit_id)): r.data_fingerprint
        for r in rows
        if (r.name, int(r.commit_id)) in wanted
    }
