"""Dataset versions: run outputs, input bindings and current versions.

- Each run's output to a non-lake dataset is one version,
  ``uuid5(run, dataset)``, dated by the run's terminal event (or its first
  mention while the run is open). Only versions of COMPLETED runs are
  candidates for "current"; FAILED and ABORTED outputs are kept but never
  current.
- A run's output to a lake dataset creates nothing: the committed version
  named by its ``version`` facet (commit id or version uuid) gets the run.
- A run input binds the version named by its ``version`` facet, or else the
  candidate current at the run's first event time, or a synthetic stand-in
  (:mod:`strata.lineage.record.bindings`). Synthetic versions have no run,
  are dated by the earliest run bound to them and are removed when no run
  is bound to them, so they depend only on the final bindings.
- A DatasetEvent (a dataset PUT sends one) declares a version of a non-lake
  dataset: one per content (schema fields, source, lifecycle state, version
  label), as Marquez names it, dated by the latest event declaring that
  content, so declaring it again makes it current again. Declared versions
  are candidates for "current" and for runs' inputs, like completed outputs.
- A dataset's current version is its latest candidate, else its latest
  synthetic version. Lake datasets' current versions belong to the
  transaction service and are never touched here.
"""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.errors import InvalidEvent
from strata.lineage.record import facets as fx
from strata.lineage.record.events import DatasetRef, Event
from strata.lineage.record.fold import IoFold, RunFold
from strata.lineage.record.rows import touch_datasets
from strata.store.bulk import (
    cached,
    chunks,
    one_of,
)
from strata.store.jsoncodec import canonical
from strata.store.owners.datasets import columns as edges_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()


def by_label(
    conn: Connection, dataset_uuid: str, label: str, lake: bool
) -> tuple[str, bool] | None:
    """The version ``label`` names, and whether it is synthetic (no run, no commit)."""
    dv = _VERSIONS
    cols = (dv.c.uuid, dv.c.run_uuid, dv.c.commit_id, dv.c.declared)
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
        .order_by(
            sa.case((dv.c.run_uuid.is_(None), 1), else_=0),
            sa.case((dv.c.declared.is_(True), 0), else_=1),
            dv.c.created_at,
            dv.c.uuid,
        )
        .limit(1)
    ).first()
    return _found(found) if found is not None else None


def _found(row: Any) -> tuple[str, bool]:
    return str(row.uuid), row.run_uuid is None and row.commit_id is None and not row.declared


@dataclass(frozen=True)
class Output:
    """One run's output to one dataset, to be (re)written.

    ``fresh``: the run had no events before, so the version has no column lineage yet.
    """

    run: RunFold
    io: IoFold
    dataset: str
    lake: bool
    fresh: bool


def write_outputs(conn: Connection, outputs: Sequence[Output]) -> None:
    """Record runs' outputs: a version each, or a lake commit's producer."""
    versions: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    cleared: list[str] = []
    for out in outputs:
        run, io = out.run, out.io
        merged = {**io.facets, **io.io_facets}
        label = fx.dataset_version_label(merged)
        created = run.ended_at or io.first_seen
        if out.lake:
            bound = _bind_lake_output(conn, run, out.dataset, label)
            if bound is not None:  # its column lineage is this run's, whatever came before
                cleared.append(bound)
                edges += _edges(conn, run, io, merged, bound, created)
            continue
        uuid = ids.output_version_uuid(run.run_id, out.dataset)
        stats = fx.get(io.io_facets, "outputStatistics")
        versions.append(
            {
                "uuid": uuid,
                "dataset_uuid": out.dataset,
                "created_at": created,
                "run_uuid": run.run_id,
                "schema_fields": fx.schema_fields(merged),
                "facets": io.facets,  # output facets stay the run's (runs.io_facets)
                "row_count": fx.integer(stats.get("rowCount")),
                "byte_count": fx.integer(stats.get("size")),
                "file_count": fx.integer(stats.get("fileCount")),
                "lifecycle_state": fx.text(
                    fx.get(merged, "lifecycleStateChange").get("lifecycleStateChange")
                ),
                "external_version": label,
            }
        )
        if not out.fresh:
            cleared.append(uuid)
        edges += _edges(conn, run, io, merged, uuid, created)
    stored_versions.upsert(conn, versions)
    edges_of.replace(conn, cleared, edges)


def _edges(
    conn: Connection,
    run: RunFold,
    io: IoFold,
    facets: dict[str, Any],
    version: str,
    created: datetime,
) -> list[dict[str, Any]]:
    """The ``column_lineage`` rows of one output version, from its ``columnLineage``."""
    # Not a dataset the run read: dropped, as Marquez drops it.
    edges = [e for e in fx.column_edges(facets) if (e.input_namespace, e.input_name) in run.inputs]
    sources = touch_datasets(
        conn, {(e.input_namespace, e.input_name) for e in edges}, io.first_seen
    )
    rows = []
    for edge in edges:
        rows.append(
            {
                "dataset_version_uuid": version,
                "output_field": edge.output_field,
                "input_dataset_uuid": sources[(edge.input_namespace, edge.input_name)],
                "input_field": edge.input_field,
                "transformation_type": edge.transformation_type,
                "transformation_description": edge.transformation_description,
                "created_at": created,
            }
        )
    return rows


def labelled_outputs(events: Sequence[Event]) -> list[tuple[Event, DatasetRef, str]]:
    """The events' outputs that name a version (``version`` facet), with the label."""
    out = []
    for ev in events:
        for ref in ev.outputs:
            label = fx.dataset_version_label({**ref.facets, **ref.io_facets})
            if label is not None:
                out.append((ev, ref, label))
    return out


def check_lake_outputs(conn: Connection, events: Sequence[Event]) -> None:
    """Refuse an event naming a version of a lake dataset that was never committed.

    Checked when an event is stored, so the sender hears of it; the answer cannot
    change later, since committed versions are never removed.
    """
    d = _DATASETS
    for ev, ref, label in labelled_outputs(events):
        row = conn.execute(
            cached(
                ("lake-by-name",),
                lambda: sa.select(d.c.uuid).where(
                    d.c.namespace == sa.bindparam("ns"),
                    d.c.name == sa.bindparam("n"),
                    d.c.is_lake.is_(True),
                ),
            ),
            {"ns": ref.namespace, "n": ref.name},
        ).first()
        if row is not None and by_label(conn, str(row.uuid), label, lake=True) is None:
            raise _missing_commit(ev.run_id, label)


def _missing_commit(run_id: str | None, label: str) -> InvalidEvent:
    return InvalidEvent(
        f"run {run_id} names version {label!r} of a lake dataset that has no such "
        "committed version; send the commit id the transaction service returned",
        path="$.outputs[].facets.version.datasetVersion",
        value=label,
    )


def _bind_lake_output(
    conn: Connection, run: RunFold, dataset: str, label: str | None
) -> str | None:
    """Name ``run`` as the producer of the lake commit it wrote; that version's uuid."""
    if label is None:
        return None  # nothing says which commit the run wrote; the transaction service may
    found = by_label(conn, dataset, label, lake=True)
    if found is None:
        raise _missing_commit(run.run_id, label)
    stored_versions.set_producer(conn, found[0], run.run_id)
    return str(found[0])


@dataclass(frozen=True)
class Moved:
    """A change in ``run``'s output to ``dataset`` that consumers may see.

    ``since``: the earliest time the output was or is a candidate (None: it never
    was); ``labels``: the output's old and new labels and its own uuid.
    """

    dataset: str
    run: str
    since: datetime | None
    labels: frozenset[str]


def declare(conn: Connection, dataset: str, event: Event) -> Moved | None:
    """Write the version a DatasetEvent declares of non-lake ``dataset``: one per content
    (schema fields, source, lifecycle state, version label), dated by the latest event
    declaring it, with that event's facets (at the same time, those whose canonical text
    sorts last). What its consumers may see of it, or None if nothing changed."""
    assert event.dataset is not None
    facets = event.dataset.facets
    label = fx.dataset_version_label(facets)
    lifecycle = fx.text(fx.get(facets, "lifecycleStateChange").get("lifecycleStateChange"))
    content = {
        "fields": fx.schema_fields(facets),
        "source": fx.text(fx.get(facets, "dataSource").get("name")),
        "lifecycle": lifecycle,
        "label": label,
        "schemaLocation": fx.text(fx.get(facets, "schemaLocation").get("url")),
    }
    digest = hashlib.sha256(canonical(content).encode()).hexdigest()
    uuid = ids.declared_version_uuid(dataset, digest)
    dv = _VERSIONS
    stored = conn.execute(sa.select(dv.c.created_at, dv.c.facets).where(dv.c.uuid == uuid)).first()
    at = event.event_time
    if stored is not None and (stored.created_at, canonical(stored.facets or {})) >= (
        at,
        canonical(facets),
    ):
        return None
    row = {
        "uuid": uuid,
        "dataset_uuid": dataset,
        "created_at": at,
        "schema_fields": content["fields"],
        "facets": facets,
        "lifecycle_state": lifecycle,
        "external_version": label,
        "declared": True,
    }
    stored_versions.upsert(conn, [row])
    since = at if stored is None else min(at, stored.created_at)
    return Moved(dataset, "", since, frozenset({uuid, *([label] if label else [])}))


def consumers_of(conn: Connection, moved: Sequence[Moved]) -> set[str]:
    """Runs whose binding a change in the ``moved`` outputs may move.

    A run bound by time can see an output only as a completed candidate, so only
    runs that started at or after ``since`` can move: one scan from the earliest
    ``since`` of the group finds them all, and each is then held to its own output's
    time. A run bound by label is bound to a version carrying one of the labels, or to
    the output itself.
    """
    found: set[str] = set()
    timed: dict[str, list[Moved]] = {}
    for m in moved:
        if m.since is not None:
            timed.setdefault(m.dataset, []).append(m)
    if timed:
        since = min(m.since for ms in timed.values() for m in ms if m.since is not None)
        for run, created, dataset in bound.readers_since(conn, since, sorted(timed)):
            for m in timed[dataset]:
                if m.since is not None and created >= m.since and run != m.run:
                    found.add(run)
                    break
    named = [(i, m, label) for i, m in enumerate(moved) for label in sorted(m.labels)]
    labelled = [(i, m.dataset, label) for i, m, label in named]
    for k, run in bound.readers_by_label(conn, labelled):
        if run != moved[k].run:
            found.add(run)
    return found


def settle(conn: Connection, datasets: Iterable[str]) -> None:
    """Date or drop the synthetic versions of non-lake ``datasets``, then move their
    current pointers."""
    keys_ = sorted(set(datasets))
    dead: list[str] = []
    dated: list[dict[str, Any]] = []
    stmt = cached(("synthetic-dates", conn.dialect.name), lambda: _first_reads(conn.dialect.name))
    for chunk in chunks(keys_):
        synthetic = conn.execute(stmt, {"d": list(chunk)}).all()
        dead += [str(row.uuid) for row in synthetic if row.first is None]
        dated += [
            {"uuid": str(row.uuid), "created_at": row.first}
            for row in synthetic
            if row.first is not None and row.first != row.created_at
        ]
    stored_versions.delete(conn, dead)
    stored_versions.update(conn, dated)
    set_current(conn, keys_)


def _first_reads(dialect: str) -> Any:
    """The synthetic versions of the ``:d`` datasets, each with when its first reader
    was created (NULL: no run reads it)."""
    dv, r = _VERSIONS, stored_runs.relation()
    q = sa.select(dv.c.uuid, dv.c.created_at).select_from(dv)
    q, read = bound.join_read(q, version=dv.c.uuid, outer=True)
    return (
        q.outerjoin(r, r.c.uuid == read.run)
        .add_columns(sa.func.min(r.c.created_at).label("first"))
        .where(one_of(dialect, dv.c.dataset_uuid, "d"), stored_versions.is_synthetic(dv))
        .group_by(dv.c.uuid, dv.c.created_at)
    )


def set_current(conn: Connection, datasets: Iterable[str]) -> None:
    """Move the datasets' current pointers: each one's latest candidate (completed output
    or declared version), else its latest synthetic version. Synthetic versions must
    already be settled."""
    dv, r = _VERSIONS, stored_runs.relation()

    def pick(d: Any) -> Any:
        order = (dv.c.created_at.desc(), dv.c.uuid.desc())
        completed = (
            sa.select(dv.c.uuid)
            .outerjoin(r, r.c.uuid == dv.c.run_uuid)
            .where(
                dv.c.dataset_uuid == d.c.uuid,
                sa.or_(r.c.state == "COMPLETED", dv.c.declared.is_(True)),
            )
            .order_by(*order)
            .limit(1)
            .scalar_subquery()
        )
        synthetic = (
            sa.select(dv.c.uuid)
            .where(dv.c.dataset_uuid == d.c.uuid, stored_versions.is_synthetic(dv))
            .order_by(*order)
            .limit(1)
            .scalar_subquery()
        )
        # COALESCE evaluates the synthetic scan only when no run completed an output.
        return sa.func.coalesce(completed, synthetic)

    dataset_rows.set_current(conn, set(datasets), pick, "set-current")
