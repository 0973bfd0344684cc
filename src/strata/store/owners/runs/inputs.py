"""The versions each run read: ``run_inputs``, one row per run and dataset version.

The fold binds a run's inputs and rebinds them as later events move them; lineage
retention drops a run's bindings with the run. Every read that follows a binding
(a run's inputs, a version's readers) joins through :func:`join_read`, so the table is
named here alone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import run_inputs
from strata.store.types import UTCDateTime

_RI = run_inputs
Q = TypeVar("Q", bound=sa.Select[Any])


@dataclass(frozen=True, slots=True)
class Read:
    """One binding's columns inside a statement :func:`join_read` joined it to."""

    run: sa.ColumnElement[Any]
    version: sa.ColumnElement[Any]


@dataclass(frozen=True, slots=True)
class Binding:
    """Run ``run`` read dataset version ``version``."""

    run: str
    version: str


# --- reads ------------------------------------------------------------------------------


def join_read(
    q: Q,
    *,
    run: sa.ColumnElement[Any] | None = None,
    version: sa.ColumnElement[Any] | None = None,
    outer: bool = False,
) -> tuple[Q, Read]:
    """``q`` joined to the bindings of ``run`` and/or of ``version`` (columns of ``q``),
    and the bindings' columns to join on or select. ``outer`` keeps rows with none."""
    pairs = ((_RI.c.run_uuid, run), (_RI.c.dataset_version_uuid, version))
    on = [mine == theirs for mine, theirs in pairs if theirs is not None]
    if not on:
        raise ValueError("join_read needs a run or a version column to join on")
    joined = q.join(_RI, sa.and_(*on), isouter=outer)
    return joined, Read(_RI.c.run_uuid, _RI.c.dataset_version_uuid)


def readers_among(conn: Connection, runs: Collection[str]) -> set[str]:
    """Those of ``runs`` bound to any input (the primary key leads with the run)."""
    return _distinct_of(conn, _RI.c.run_uuid, runs)


def read_versions(conn: Connection, versions: Collection[str]) -> set[str]:
    """Those of ``versions`` some run read (``ix_run_inputs_version``)."""
    return _distinct_of(conn, _RI.c.dataset_version_uuid, versions)


def _distinct_of(conn: Connection, column: Any, ids: Collection[str]) -> set[str]:
    """Those of ``ids`` found in ``column``."""
    stmt = bulk.select_by_ids(f"bound-{column.name}", conn, column, column)
    return {str(row[0]) for row in bulk.rows_by_ids(conn, stmt.distinct(), sorted(set(ids)))}


# Runs that started at or after a time and read one of some datasets. The runs come
# first: with in-order delivery that is the last few runs (a group's own, mostly), where
# starting from the datasets would visit all of their versions. CROSS JOIN fixes that
# order on SQLite; on PostgreSQL a LATERAL subquery does.
_SINCE = {
    "sqlite": (
        "SELECT ri.run_uuid, r.created_at, dv.dataset_uuid FROM runs r"
        " CROSS JOIN run_inputs ri CROSS JOIN dataset_versions dv"
        " WHERE r.created_at >= :t AND ri.run_uuid = r.uuid"
        " AND dv.uuid = ri.dataset_version_uuid AND dv.dataset_uuid IN :d"
    ),
    # The inputs of each recent run looked up through the index, run by run: joined as
    # sets, PostgreSQL hashed every run's inputs ever stored for a group's few hundred
    # recent runs, a cost that grew with the store. OFFSET 0 keeps the subquery from
    # being pulled up into such a join again.
    "postgresql": (
        "SELECT x.run_uuid, r.created_at, x.dataset_uuid FROM runs r CROSS JOIN LATERAL ("
        "SELECT ri.run_uuid, dv.dataset_uuid FROM run_inputs ri"
        " JOIN dataset_versions dv ON dv.uuid = ri.dataset_version_uuid"
        " WHERE ri.run_uuid = r.uuid AND dv.dataset_uuid IN :d OFFSET 0) AS x"
        " WHERE r.created_at >= :t"
    ),
}
# Runs bound by label: to a version carrying one of the labels, or to the output itself.
_BY_LABEL = (
    "SELECT m.k, ri.run_uuid FROM m JOIN dataset_versions dv ON dv.dataset_uuid = m.d"
    " AND dv.external_version = m.v"
    " JOIN run_inputs ri ON ri.dataset_version_uuid = dv.uuid"
    " UNION SELECT m.k, ri.run_uuid FROM m JOIN run_inputs ri ON ri.dataset_version_uuid = m.v"
)


def readers_since(
    conn: Connection, since: datetime, datasets: Sequence[str]
) -> list[tuple[str, datetime, str]]:
    """``(run, created at, dataset)`` of the runs created at or after ``since`` that read a
    version of one of ``datasets``."""
    dialect = conn.dialect.name
    ts = UTCDateTime()
    stmt = bulk.cached(
        ("consumers-since", dialect),
        lambda: (
            sa.text(_SINCE[dialect])
            .bindparams(sa.bindparam("t", type_=ts), sa.bindparam("d", expanding=True))
            .columns(sa.column("run_uuid"), sa.column("created_at", ts), sa.column("dataset_uuid"))
        ),
    )
    return [
        (str(row[0]), row[1], str(row[2]))
        for chunk in bulk.chunks(datasets)
        for row in conn.execute(stmt, {"t": since, "d": list(chunk)}).all()
    ]


def readers_by_label(
    conn: Connection, labelled: Sequence[tuple[int, str, str]]
) -> list[tuple[int, str]]:
    """``(key, run)`` for each ``(key, dataset, label)`` and each run bound to a version
    of that dataset carrying that label, or to the version whose uuid is the label."""
    rows = bulk.lookup_rows(
        conn,
        ("consumers-label",),
        "m",
        {"k": None, "d": None, "v": None},
        [{"k": k, "d": d, "v": v} for k, d, v in labelled],
        _BY_LABEL,
    )
    return [(int(row[0]), str(row[1])) for row in rows]


_CURRENT_AT = {
    # The candidate current at the run's bind time: its latest completed output (not the
    # run's own), or for a lake dataset its latest commit.
    False: (
        "SELECT dv.uuid FROM dataset_versions dv LEFT JOIN runs r ON r.uuid = dv.run_uuid"
        " WHERE dv.dataset_uuid = q.d"
        " AND ((r.state = 'COMPLETED' AND r.uuid != q.r) OR dv.declared)"
        " AND dv.created_at <= q.t ORDER BY dv.created_at DESC, dv.uuid DESC LIMIT 1"
    ),
    True: (
        "SELECT dv.uuid FROM dataset_versions dv WHERE dv.dataset_uuid = q.d"
        " AND dv.commit_id IS NOT NULL AND dv.created_at <= q.t"
        " ORDER BY dv.commit_id DESC LIMIT 1"
    ),
}


def candidates_at(
    conn: Connection, wanted: Sequence[tuple[str, bool, str, datetime]]
) -> list[str | None]:
    """For each ``(dataset, lake, run, bind time)``, the version a run binding then would
    read: of a lake dataset its latest commit, of any other its latest completed output
    (not the run's own) or declared version."""
    out: list[str | None] = [None] * len(wanted)
    for lake in (False, True):
        picked = [
            {"k": i, "d": w[0], "r": w[2], "t": w[3]} for i, w in enumerate(wanted) if w[1] is lake
        ]
        for row in bulk.lookup_rows(
            conn,
            ("current-at", lake),
            "q",
            {"k": None, "d": None, "r": None, "t": UTCDateTime()},
            picked,
            f"SELECT q.k, ({_CURRENT_AT[lake]}) FROM q",
        ):
            out[int(row[0])] = str(row[1]) if row[1] is not None else None
    return out


# --- writes -----------------------------------------------------------------------------


def rebind(conn: Connection, gone: Sequence[Binding], new: Sequence[Binding]) -> None:
    """Drop the bindings ``gone``, then add ``new`` (one statement each)."""
    if gone:
        unbind = bulk.cached(
            ("unbind",),
            lambda: _RI.delete().where(
                _RI.c.run_uuid == sa.bindparam("r"),
                _RI.c.dataset_version_uuid == sa.bindparam("v"),
            ),
        )
        bulk.execute_many(conn, unbind, [{"r": b.run, "v": b.version} for b in gone])
    if new:
        rows = [{"run_uuid": b.run, "dataset_version_uuid": b.version} for b in new]
        bulk.execute_many(conn, bulk.cached(("bind",), _RI.insert), rows)


def delete_of_runs(conn: Connection, runs: Sequence[str]) -> None:
    """Drop every binding of ``runs``, before the runs go."""
    conn.execute(_RI.delete().where(_RI.c.run_uuid.in_(runs)))
