"""Dataset versions: run outputs, input bindings and current versions.

- Each run's output to a non-lake dataset is one version,
  ``uuid5(run, dataset)``, dated by the run's terminal event (or its first
  mention while the run is open). Only versions of COMPLETED runs are
  candidates for "current"; FAILED and ABORTED outputs are kept but never
  current.
- A run's output to a lake dataset creates nothing: the committed version
  named by its ``version`` facet (commit id or version uuid) gets the run.
- A run input binds the version named by its ``version`` facet, or else the
  candidate current at the run's first event time. When there is none, a
  synthetic version stands in: ``initial`` for an unnamed one, or a
  placeholder for a named one not seen yet. Synthetic versions have no run,
  are dated by the earliest run bound to them and are removed when no run
  is bound to them, so they depend only on the final bindings.
- A dataset's current version is its latest candidate, else its latest
  synthetic version. Lake datasets' current versions belong to the
  transaction service and are never touched here.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import InvalidEvent
from strata.lineage import facets as fx
from strata.lineage import keys
from strata.lineage.fold import IoFold, RunFold
from strata.lineage.rows import cached, insert_ignore, touch_dataset, upsert
from strata.store import schema as s


def is_lake(conn: Connection, dataset_uuid: str) -> bool:
    d = s.datasets
    return bool(conn.execute(sa.select(d.c.is_lake).where(d.c.uuid == dataset_uuid)).scalar())


def _by_label(
    conn: Connection, dataset_uuid: str, label: str, lake: bool
) -> tuple[str, bool] | None:
    """The version ``label`` names, and whether it is synthetic (no run, no commit)."""
    dv = s.dataset_versions
    cols = (dv.c.uuid, dv.c.run_uuid, dv.c.commit_id)
    if lake and label.isdigit():
        found = conn.execute(
            sa.select(*cols).where(dv.c.dataset_uuid == dataset_uuid, dv.c.commit_id == int(label))
        ).first()
        if found is not None:
            return _found(found)
    try:
        as_uuid = str(uuidlib.UUID(label))
    except ValueError:
        as_uuid = None
    if as_uuid is not None:
        found = conn.execute(
            sa.select(*cols).where(dv.c.dataset_uuid == dataset_uuid, dv.c.uuid == as_uuid)
        ).first()
        if found is not None:
            return _found(found)
    if lake:
        return None
    found = conn.execute(
        sa.select(*cols)
        .where(dv.c.dataset_uuid == dataset_uuid, dv.c.external_version == label)
        .order_by(sa.case((dv.c.run_uuid.is_(None), 1), else_=0), dv.c.created_at, dv.c.uuid)
        .limit(1)
    ).first()
    return _found(found) if found is not None else None


def _found(row: Any) -> tuple[str, bool]:
    return str(row.uuid), row.run_uuid is None and row.commit_id is None


def _current_at(
    conn: Connection, dataset_uuid: str, lake: bool, run: RunFold
) -> tuple[str, bool] | None:
    dv, r = s.dataset_versions, s.runs

    def build() -> Any:
        if lake:
            return (
                sa.select(dv.c.uuid)
                .where(
                    dv.c.dataset_uuid == sa.bindparam("d"),
                    dv.c.commit_id.is_not(None),
                    dv.c.created_at <= sa.bindparam("t", type_=dv.c.created_at.type),
                )
                .order_by(dv.c.commit_id.desc())
                .limit(1)
            )
        return (
            sa.select(dv.c.uuid)
            .join(r, r.c.uuid == dv.c.run_uuid)
            .where(
                dv.c.dataset_uuid == sa.bindparam("d"),
                r.c.state == "COMPLETED",
                r.c.uuid != sa.bindparam("r"),
                dv.c.created_at <= sa.bindparam("t", type_=dv.c.created_at.type),
            )
            .order_by(dv.c.created_at.desc(), dv.c.uuid.desc())
            .limit(1)
        )

    params = {"d": dataset_uuid, "t": run.bind_time}
    if not lake:
        params["r"] = run.run_id
    found = conn.execute(cached(("current-at", lake), build), params).scalar()
    return (str(found), False) if found is not None else None


def _synthetic(conn: Connection, dataset_uuid: str, label: str | None, run: RunFold) -> str:
    uuid = (
        keys.named_version_uuid(dataset_uuid, label)
        if label
        else keys.initial_version_uuid(dataset_uuid)
    )
    insert_ignore(
        conn,
        s.dataset_versions,
        {
            "uuid": uuid,
            "dataset_uuid": dataset_uuid,
            "created_at": run.bind_time,
            "external_version": label,
        },
        ["uuid"],
    )
    return uuid


def bind_inputs(
    conn: Connection,
    run: RunFold,
    datasets: Mapping[tuple[str, str], str],
    lake: AbstractSet[str],
    *,
    fresh: bool = False,
    retimed: bool = True,
) -> set[str]:
    """Rewrite the run's ``run_inputs``; returns the datasets :func:`settle` must visit.

    Only synthetic versions depend on bindings (their dates and existence), so
    a dataset needs settling when a synthetic version of it was bound or
    unbound, or when the run's bind time moved (``retimed``) while bound to
    one. ``fresh`` says the run has never been bound (it had no events), which
    saves reading its bindings back.
    """
    ri, dv = s.run_inputs, s.dataset_versions
    before = (
        []
        if fresh
        else conn.execute(
            cached(
                ("bound",),
                lambda: (
                    sa.select(
                        ri.c.dataset_version_uuid,
                        dv.c.dataset_uuid,
                        sa.and_(dv.c.run_uuid.is_(None), dv.c.commit_id.is_(None)).label("synth"),
                    )
                    .join(dv, ri.c.dataset_version_uuid == dv.c.uuid)
                    .where(ri.c.run_uuid == sa.bindparam("r"))
                ),
            ),
            {"r": run.run_id},
        ).all()
    )
    had = {
        str(row.dataset_version_uuid): (str(row.dataset_uuid), bool(row.synth)) for row in before
    }
    wanted: dict[str, tuple[str, bool]] = {}
    for key, io in sorted(run.inputs.items()):
        dataset = datasets[key]
        is_lake = dataset in lake
        label = fx.dataset_version_label({**io.facets, **io.io_facets})
        found = (
            _by_label(conn, dataset, label, is_lake)
            if label
            else _current_at(conn, dataset, is_lake, run)
        )
        if found is None and not is_lake:
            found = (_synthetic(conn, dataset, label, run), True)
        if found is not None:
            wanted[found[0]] = (dataset, found[1])
    gone = sorted(set(had) - set(wanted))
    if gone:
        conn.execute(
            cached(
                ("unbind",),
                lambda: ri.delete().where(
                    ri.c.run_uuid == sa.bindparam("r"),
                    ri.c.dataset_version_uuid == sa.bindparam("v"),
                ),
            ),
            [{"r": run.run_id, "v": v} for v in gone],
        )
    new = sorted(set(wanted) - set(had))
    if new:
        conn.execute(
            cached(("bind",), ri.insert),
            [{"run_uuid": run.run_id, "dataset_version_uuid": v} for v in new],
        )
    settle = {had[v][0] for v in gone if had[v][1]} | {wanted[v][0] for v in new if wanted[v][1]}
    if retimed:
        settle |= {d for d, synth in wanted.values() if synth}
    return settle


def write_output(
    conn: Connection, run: RunFold, io: IoFold, dataset: str, lake: bool, *, fresh: bool = False
) -> None:
    """Record the run's output to ``dataset`` (a version, or a lake commit's producer).

    ``fresh``: the run had no events before, so the version has no column lineage yet.
    """
    merged = {**io.facets, **io.io_facets}
    label = fx.dataset_version_label(merged)
    if lake:
        _bind_lake_output(conn, run, dataset, label)
        return
    dv = s.dataset_versions
    uuid = keys.output_version_uuid(run.run_id, dataset)
    created = run.ended_at or io.first_seen
    stats = fx.get(io.io_facets, "outputStatistics")
    values: dict[str, Any] = {
        "dataset_uuid": dataset,
        "created_at": created,
        "run_uuid": run.run_id,
        "schema_fields": fx.schema_fields(merged),
        "facets": merged,
        "row_count": fx.integer(stats.get("rowCount")),
        "byte_count": fx.integer(stats.get("size")),
        "file_count": fx.integer(stats.get("fileCount")),
        "lifecycle_state": fx.text(
            fx.get(merged, "lifecycleStateChange").get("lifecycleStateChange")
        ),
        "external_version": label,
    }
    conn.execute(upsert(conn, dv, ["uuid", *values], ["uuid"]), {"uuid": uuid, **values})
    cl = s.column_lineage
    if not fresh:
        conn.execute(
            cached(
                ("cl-clear",),
                lambda: cl.delete().where(cl.c.dataset_version_uuid == sa.bindparam("v")),
            ),
            {"v": uuid},
        )
    rows = []
    for edge in fx.column_edges(merged):
        source = touch_dataset(conn, edge.input_namespace, edge.input_name, io.first_seen)
        rows.append(
            {
                "dataset_version_uuid": uuid,
                "output_field": edge.output_field,
                "input_dataset_uuid": source,
                "input_field": edge.input_field,
                "transformation_type": edge.transformation_type,
                "transformation_description": edge.transformation_description,
                "created_at": created,
            }
        )
    if rows:
        conn.execute(cl.insert(), rows)


def _bind_lake_output(conn: Connection, run: RunFold, dataset: str, label: str | None) -> None:
    if label is None:
        return  # nothing says which commit the run wrote; the transaction service may know
    found = _by_label(conn, dataset, label, lake=True)
    if found is None:
        raise InvalidEvent(
            f"run {run.run_id} names version {label!r} of a lake dataset that has no such "
            "committed version; send the commit id the transaction service returned",
            path="$.outputs[].facets.version.datasetVersion",
            value=label,
        )
    dv = s.dataset_versions
    conn.execute(dv.update().where(dv.c.uuid == found[0]).values(run_uuid=run.run_id))


# The runs that started at or after a time come first: with in-order delivery that
# is the last few runs, where starting from the dataset would visit all of its
# versions. CROSS JOIN fixes that order on SQLite; PostgreSQL plans it alike. The
# other two arms find runs bound by label: to a version carrying one of the
# labels, or to the output version itself.
_SINCE = (
    "SELECT ri.run_uuid FROM runs r"
    " CROSS JOIN run_inputs ri CROSS JOIN dataset_versions dv"
    " WHERE r.created_at >= :t AND ri.run_uuid = r.uuid"
    " AND dv.uuid = ri.dataset_version_uuid AND dv.dataset_uuid = :d"
)
_BY_LABEL = (
    "SELECT ri.run_uuid FROM dataset_versions dv"
    " JOIN run_inputs ri ON ri.dataset_version_uuid = dv.uuid"
    " WHERE dv.dataset_uuid = :d AND dv.external_version IN :labels"
    " UNION SELECT run_uuid FROM run_inputs WHERE dataset_version_uuid = :v"
)
_CONSUMERS = {
    True: sa.text(f"{_SINCE} UNION {_BY_LABEL}").bindparams(
        sa.bindparam("t", type_=s.runs.c.created_at.type),
        sa.bindparam("labels", expanding=True),
    ),
    False: sa.text(_BY_LABEL).bindparams(sa.bindparam("labels", expanding=True)),
}


def consumers_since(
    conn: Connection,
    dataset: str,
    run: RunFold,
    since: datetime | None,
    labels: AbstractSet[str],
) -> list[str]:
    """Runs whose binding to ``dataset`` a change in ``run``'s output to it may move.

    A run bound by time can see the output only as a completed candidate, so only
    runs that started at or after ``since`` (the earliest time the output was or
    is a candidate; None: it never was) can move. A run bound by label is bound
    to a version carrying one of ``labels`` (the output's old and new labels and
    its own uuid), or to the output itself.
    """
    params: dict[str, Any] = {
        "d": dataset,
        "labels": sorted(labels),
        "v": keys.output_version_uuid(run.run_id, dataset),
    }
    if since is not None:
        params["t"] = since
    found: list[Any] = list(conn.execute(_CONSUMERS[since is not None], params).scalars().all())
    return sorted({str(u) for u in found} - {run.run_id})


def settle(conn: Connection, dataset: str, lake: bool | None = None) -> None:
    """Date or drop synthetic versions, then move the current pointer."""
    if lake if lake is not None else is_lake(conn, dataset):
        return
    dv, ri, r = s.dataset_versions, s.run_inputs, s.runs
    synthetic = conn.execute(
        cached(
            ("synthetic-dates",),
            lambda: (
                sa.select(dv.c.uuid, sa.func.min(r.c.created_at).label("first"))
                .select_from(dv)
                .outerjoin(ri, ri.c.dataset_version_uuid == dv.c.uuid)
                .outerjoin(r, r.c.uuid == ri.c.run_uuid)
                .where(
                    dv.c.dataset_uuid == sa.bindparam("d"),
                    dv.c.run_uuid.is_(None),
                    dv.c.commit_id.is_(None),
                )
                .group_by(dv.c.uuid)
            ),
        ),
        {"d": dataset},
    ).all()
    dead = [{"v": row.uuid} for row in synthetic if row.first is None]
    dated = [{"v": row.uuid, "first": row.first} for row in synthetic if row.first is not None]
    if dead:
        conn.execute(
            cached(("drop-version",), lambda: dv.delete().where(dv.c.uuid == sa.bindparam("v"))),
            dead,
        )
    if dated:
        conn.execute(
            cached(
                ("date-version",),
                lambda: (
                    dv.update()
                    .where(dv.c.uuid == sa.bindparam("v"))
                    .values(created_at=sa.bindparam("first", type_=dv.c.created_at.type))
                ),
            ),
            dated,
        )
    set_current(conn, dataset)


def set_current(conn: Connection, dataset: str) -> None:
    """Move the dataset's current pointer: its latest completed output, else its latest
    synthetic version. Synthetic versions must already be settled."""
    dv, r, d = s.dataset_versions, s.runs, s.datasets

    def build() -> Any:
        order = (dv.c.created_at.desc(), dv.c.uuid.desc())
        completed = (
            sa.select(dv.c.uuid)
            .join(r, r.c.uuid == dv.c.run_uuid)
            .where(dv.c.dataset_uuid == sa.bindparam("key"), r.c.state == "COMPLETED")
            .order_by(*order)
            .limit(1)
            .scalar_subquery()
        )
        synthetic = (
            sa.select(dv.c.uuid)
            .where(
                dv.c.dataset_uuid == sa.bindparam("key"),
                dv.c.run_uuid.is_(None),
                dv.c.commit_id.is_(None),
            )
            .order_by(*order)
            .limit(1)
            .scalar_subquery()
        )
        # COALESCE evaluates the synthetic scan only when no run completed an output.
        return (
            d.update()
            .where(d.c.uuid == sa.bindparam("key"))
            .values(current_version_uuid=sa.func.coalesce(completed, synthetic))
        )

    conn.execute(cached(("set-current",), build), {"key": dataset})
