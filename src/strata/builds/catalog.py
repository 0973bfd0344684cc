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
from strata.store.fetch import plain_rows


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


_D, _DV, _T = s.datasets, s.dataset_versions, s.transactions
# The run that made a version: its own, or its transaction's while the run's COMPLETE
# event is not folded yet.
_PRODUCER = sa.func.coalesce(_DV.c.run_uuid, _T.c.run_uuid)


def _of_current(q: sa.Select[Any], namespace: str, names: Collection[str] | None) -> sa.Select[Any]:
    """``q`` over the lake datasets of ``namespace`` (or ``names``) and their current
    versions; joins after it may use :data:`_PRODUCER`."""
    q = (
        q.select_from(_D)
        .join(_DV, _DV.c.uuid == _D.c.current_version_uuid)
        .outerjoin(_T, _T.c.uuid == _DV.c.transaction_uuid)
        .where(_D.c.namespace == namespace, _D.c.is_lake.is_(True), _D.c.deleted_at.is_(None))
    )
    return q.where(_D.c.name.in_(sorted(names))) if names is not None else q


def _current_rows(namespace: str, names: Collection[str] | None) -> sa.Select[Any]:
    # The program version (its uuid is the run's job version) names the job and the
    # fingerprint: a run of another producer has none, and counts as no build.
    r, pv = s.runs, s.program_versions
    columns = sa.select(
        _D.c.name,
        _DV.c.commit_id,
        _DV.c.data_fingerprint,
        _PRODUCER.label("run"),
        pv.c.job_name,
        pv.c.fingerprint,
        pv.c.ordinal,
    )
    return (
        _of_current(columns, namespace, names)
        .outerjoin(r, r.c.uuid == _PRODUCER)
        .outerjoin(pv, pv.c.uuid == r.c.job_version_uuid)
    )


def _input_rows(namespace: str, names: Collection[str] | None) -> sa.Select[Any]:
    ri = s.run_inputs
    ind, iv = s.datasets.alias("ind"), s.dataset_versions.alias("iv")
    columns = sa.select(_D.c.name, ind.c.name.label("input"), iv.c.commit_id, iv.c.data_fingerprint)
    return (
        _of_current(columns, namespace, names)
        .join(ri, ri.c.run_uuid == _PRODUCER)
        .join(iv, iv.c.uuid == ri.c.dataset_version_uuid)
        .join(ind, ind.c.uuid == iv.c.dataset_uuid)
    )


def load_current(
    conn: Connection, namespace: str, names: Collection[str] | None = None
) -> dict[str, Current]:
    """Current versions with their catalog entries: every lake dataset, or ``names``."""
    out: dict[str, Current] = {}
    for name, cid, fp, run, job, program, ordinal in plain_rows(
        conn, _current_rows(namespace, names)
    ):
        out[name] = Current(name, int(cid), fp, run, job, program, ordinal, {})
    for name, input_name, cid, fp in plain_rows(conn, _input_rows(namespace, names)):
        cur = out.get(name)
        if cur is not None:
            cur.inputs[input_name] = BuiltFrom(int(cid) if cid is not None else None, fp)
    return out


def program_ordinals(conn: Connection, namespace: str) -> dict[tuple[str, str], int]:
    """``(job name, fingerprint) -> ordinal`` of every program version registered."""
    pv = s.program_versions
    rows = conn.execute(
        sa.select(pv.c.job_name, pv.c.fingerprint, pv.c.ordinal).where(pv.c.namespace == namespace)
    )
    return {(r.job_name, r.fingerprint): int(r.ordinal) for r in rows}
