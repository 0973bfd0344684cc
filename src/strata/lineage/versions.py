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
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import InvalidEvent
from strata.lineage import facets as fx
from strata.lineage import keys
from strata.lineage.fold import IoFold, RunFold
from strata.lineage.rows import insert_ignore, touch_dataset
from strata.store import schema as s


def is_lake(conn: Connection, dataset_uuid: str) -> bool:
    d = s.datasets
    return bool(conn.execute(sa.select(d.c.is_lake).where(d.c.uuid == dataset_uuid)).scalar())


def _by_label(conn: Connection, dataset_uuid: str, label: str, lake: bool) -> str | None:
    dv = s.dataset_versions
    if lake and label.isdigit():
        found = conn.execute(
            sa.select(dv.c.uuid).where(
                dv.c.dataset_uuid == dataset_uuid, dv.c.commit_id == int(label)
            )
        ).scalar()
        if found is not None:
            return str(found)
    try:
        as_uuid = str(uuidlib.UUID(label))
    except ValueError:
        as_uuid = None
    if as_uuid is not None:
        found = conn.execute(
            sa.select(dv.c.uuid).where(dv.c.dataset_uuid == dataset_uuid, dv.c.uuid == as_uuid)
        ).scalar()
        if found is not None:
            return str(found)
    if lake:
        return None
    found = conn.execute(
        sa.select(dv.c.uuid)
        .where(dv.c.dataset_uuid == dataset_uuid, dv.c.external_version == label)
        .order_by(sa.case((dv.c.run_uuid.is_(None), 1), else_=0), dv.c.created_at, dv.c.uuid)
        .limit(1)
    ).scalar()
    return str(found) if found is not None else None


def _current_at(conn: Connection, dataset_uuid: str, lake: bool, run: RunFold) -> str | None:
    dv, r = s.dataset_versions, s.runs
    if lake:
        query = (
            sa.select(dv.c.uuid)
            .where(
                dv.c.dataset_uuid == dataset_uuid,
                dv.c.commit_id.is_not(None),
                dv.c.created_at <= run.bind_time,
            )
            .order_by(dv.c.commit_id.desc())
        )
    else:
        query = (
            sa.select(dv.c.uuid)
            .join(r, r.c.uuid == dv.c.run_uuid)
            .where(
                dv.c.dataset_uuid == dataset_uuid,
                r.c.state == "COMPLETED",
                r.c.uuid != run.run_id,
                dv.c.created_at <= run.bind_time,
            )
            .order_by(dv.c.created_at.desc(), dv.c.uuid.desc())
        )
    found = conn.execute(query.limit(1)).scalar()
    return str(found) if found is not None else None


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
    conn: Connection, run: RunFold, datasets: Mapping[tuple[str, str], str]
) -> set[str]:
    """Rewrite the run's ``run_inputs``; returns the datasets whose bindings may have changed."""
    ri, dv = s.run_inputs, s.dataset_versions
    before = conn.execute(
        sa.select(dv.c.dataset_uuid)
        .join(ri, ri.c.dataset_version_uuid == dv.c.uuid)
        .where(ri.c.run_uuid == run.run_id)
    )
    found: list[Any] = list(before.scalars().all())
    touched = {str(d) for d in found}
    conn.execute(ri.delete().where(ri.c.run_uuid == run.run_id))
    for key, io in sorted(run.inputs.items()):
        dataset = datasets[key]
        lake = is_lake(conn, dataset)
        label = fx.dataset_version_label({**io.facets, **io.io_facets})
        if label:
            version = _by_label(conn, dataset, label, lake)
        else:
            version = _current_at(conn, dataset, lake, run)
        if version is None and not lake:
            version = _synthetic(conn, dataset, label, run)
        if version is not None:
            insert_ignore(
                conn,
                ri,
                {"run_uuid": run.run_id, "dataset_version_uuid": version},
                ["run_uuid", "dataset_version_uuid"],
            )
            touched.add(dataset)
    return touched


def write_output(conn: Connection, run: RunFold, io: IoFold, dataset: str) -> None:
    """Record the run's output to ``dataset`` (a version, or a lake commit's producer)."""
    merged = {**io.facets, **io.io_facets}
    label = fx.dataset_version_label(merged)
    if is_lake(conn, dataset):
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
    if not insert_ignore(conn, dv, {"uuid": uuid, **values}, ["uuid"]):
        conn.execute(dv.update().where(dv.c.uuid == uuid).values(**values))
    cl = s.column_lineage
    conn.execute(cl.delete().where(cl.c.dataset_version_uuid == uuid))
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
    version = _by_label(conn, dataset, label, lake=True)
    if version is None:
        raise InvalidEvent(
            f"run {run.run_id} names version {label!r} of a lake dataset that has no such "
            "committed version; send the commit id the transaction service returned",
            path="$.outputs[].facets.version.datasetVersion",
            value=label,
        )
    dv = s.dataset_versions
    conn.execute(dv.update().where(dv.c.uuid == version).values(run_uuid=run.run_id))


def consumers_since(conn: Connection, dataset: str, run: RunFold) -> list[str]:
    """Runs whose binding to ``dataset`` a change in ``run``'s outputs may move."""
    ri, dv, r = s.run_inputs, s.dataset_versions, s.runs
    rows = conn.execute(
        sa.select(ri.c.run_uuid)
        .distinct()
        .join(dv, dv.c.uuid == ri.c.dataset_version_uuid)
        .join(r, r.c.uuid == ri.c.run_uuid)
        .where(
            dv.c.dataset_uuid == dataset,
            ri.c.run_uuid != run.run_id,
            sa.or_(r.c.created_at >= run.created_at, dv.c.run_uuid.is_(None)),
        )
        .order_by(ri.c.run_uuid)
    )
    found: list[Any] = list(rows.scalars().all())
    return [str(u) for u in found]


def settle(conn: Connection, dataset: str) -> None:
    """Date or drop synthetic versions, then move the current pointer."""
    if is_lake(conn, dataset):
        return
    dv, ri, r, d = s.dataset_versions, s.run_inputs, s.runs, s.datasets
    synthetic = conn.execute(
        sa.select(dv.c.uuid).where(
            dv.c.dataset_uuid == dataset, dv.c.run_uuid.is_(None), dv.c.commit_id.is_(None)
        )
    )
    pending: list[Any] = list(synthetic.scalars().all())
    for version in pending:
        first = conn.execute(
            sa.select(sa.func.min(r.c.created_at))
            .join(ri, ri.c.run_uuid == r.c.uuid)
            .where(ri.c.dataset_version_uuid == version)
        ).scalar()
        if first is None:
            conn.execute(dv.delete().where(dv.c.uuid == version))
        else:
            conn.execute(dv.update().where(dv.c.uuid == version).values(created_at=first))
    current = conn.execute(
        sa.select(dv.c.uuid)
        .join(r, r.c.uuid == dv.c.run_uuid)
        .where(dv.c.dataset_uuid == dataset, r.c.state == "COMPLETED")
        .order_by(dv.c.created_at.desc(), dv.c.uuid.desc())
        .limit(1)
    ).scalar()
    if current is None:
        current = conn.execute(
            sa.select(dv.c.uuid)
            .where(dv.c.dataset_uuid == dataset, dv.c.run_uuid.is_(None), dv.c.commit_id.is_(None))
            .order_by(dv.c.created_at.desc(), dv.c.uuid.desc())
            .limit(1)
        ).scalar()
    conn.execute(d.update().where(d.c.uuid == dataset).values(current_version_uuid=current))
