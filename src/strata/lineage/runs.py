"""Keep what one run determines equal to the fold of all of its stored events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lineage import facets as fx
from strata.lineage import jobs, keys, versions
from strata.lineage.events import Event, parse_event
from strata.lineage.fold import RunFold, fold_run
from strata.lineage.rows import (
    DatasetRow,
    cached,
    insert_ignore,
    merge_dataset_facets,
    refresh_dataset,
    touch_dataset_row,
    touch_namespaces,
    touch_source,
    upsert,
    widen_times,
)
from strata.store import schema as s


def load_events(conn: Connection, run_uuid: str) -> list[Event]:
    e = s.lineage_events
    stmt = cached(
        ("run-events",),
        lambda: sa.select(e.c.payload, e.c.payload_hash).where(e.c.run_uuid == sa.bindparam("r")),
    )
    found = conn.execute(stmt, {"r": run_uuid}).all()
    return [parse_event(row.payload, check=False, digest=row.payload_hash) for row in found]


def touch_placeholder_run(conn: Connection, run_uuid: str, job_uuid: str, at: datetime) -> None:
    """A parent run known only from a child's parent facet."""
    r, e = s.runs, s.lineage_events
    values = {
        "uuid": run_uuid,
        "job_uuid": job_uuid,
        "state": "NEW",
        "facets": {},
        "created_at": at,
        "updated_at": at,
    }
    if insert_ignore(conn, r, values, ["uuid"]):
        return
    own = conn.execute(
        cached(
            ("run-has-events",),
            lambda: sa.select(e.c.uuid).where(e.c.run_uuid == sa.bindparam("r")).limit(1),
        ),
        {"r": run_uuid},
    ).first()
    if own is None:
        widen_times(conn, r, "uuid", run_uuid, at)


def touch_event(conn: Connection, ev: Event) -> tuple[dict[tuple[str, str], DatasetRow], set[str]]:
    """Namespaces, datasets, sources and dataset facets of one event.

    Returns the event's dataset rows and the datasets whose facet values changed
    (their derived columns need a refresh). Every write here is a latest-wins or
    widening merge, so applying one event once is all the model ever needs of it.
    """
    refs = (*ev.inputs, *ev.outputs, *((ev.dataset,) if ev.dataset else ()))
    names = {ref.namespace for ref in refs}
    for ns in (ev.job_namespace, ev.parent.namespace if ev.parent else None):
        if ns is not None:
            names.add(ns)
    touch_namespaces(conn, {n: (ev.event_time, ev.event_time) for n in names})
    out: dict[tuple[str, str], DatasetRow] = {}
    stale: set[str] = set()
    stamp = ev.stamp()
    for ref in refs:
        row = out.get(ref.key)
        if row is None:
            row = out[ref.key] = touch_dataset_row(conn, ref.namespace, ref.name, ev.event_time)
        if merge_dataset_facets(conn, row, ref.facets, stamp):
            stale.add(row.uuid)
        source = fx.data_source(ref.facets)
        if source is not None:
            touch_source(conn, source[0], source[1], ev.event_time)
    return out, stale


def touch_event_datasets(conn: Connection, ev: Event) -> dict[tuple[str, str], str]:
    """Create the event's datasets, fold its dataset facets in and refresh what changed."""
    found, stale = touch_event(conn, ev)
    for row in found.values():
        if row.uuid in stale:
            refresh_dataset(conn, row.uuid, row.facets)
    return {key: row.uuid for key, row in found.items()}


def _lookup_datasets(
    conn: Connection, wanted: list[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, bool]]:
    d = s.datasets
    stmt = cached(
        ("dataset-by-name",),
        lambda: sa.select(d.c.uuid, d.c.is_lake).where(
            d.c.namespace == sa.bindparam("ns"), d.c.name == sa.bindparam("n")
        ),
    )
    out = {}
    for ns, name in wanted:
        row = conn.execute(stmt, {"ns": ns, "n": name}).one()
        out[(ns, name)] = (str(row.uuid), bool(row.is_lake))
    return out


def _labels(run: RunFold) -> dict[tuple[str, str], str | None]:
    return {
        k: fx.dataset_version_label({**io.facets, **io.io_facets}) for k, io in run.inputs.items()
    }


def _output_signature(run: RunFold | None, key: tuple[str, str]) -> Any:
    """What consumers' bindings and the current version can see of one output version."""
    if run is None or key not in run.outputs:
        return None
    io = run.outputs[key]
    label = fx.dataset_version_label({**io.facets, **io.io_facets})
    completed = run.state == "COMPLETED"
    if not completed and label is None:
        return None  # neither a candidate for "current" nor findable by label
    return (run.ended_at or io.first_seen, label, completed)


def _same_output(old: RunFold | None, run: RunFold, key: tuple[str, str]) -> bool:
    if old is None or key not in old.outputs or old.ended_at != run.ended_at:
        return False
    a, b = old.outputs[key], run.outputs[key]
    return (a.first_seen, a.facets, a.io_facets) == (b.first_seen, b.facets, b.io_facets)


def apply_run_event(conn: Connection, ev: Event) -> RunFold:
    """Bring the model up to date after storing ``ev``, a new event of its run.

    The run's own rows are a function of its fold, so they are rewritten only
    where the fold with ``ev`` differs from the fold without it; shared rows
    (namespaces, jobs, datasets) take ``ev``'s merges only, since the run's
    earlier events were merged when they arrived. Consumers are re-bound only
    when an output version they could see changed. The result equals a full
    recomputation from the run's events (tests/lineage/test_lineage_order.py).
    """
    assert ev.run_id is not None and ev.job_namespace is not None and ev.job_name is not None
    run_uuid = ev.run_id
    events = load_events(conn, run_uuid)
    run = fold_run(events)
    earlier = [e for e in events if e.payload_hash != ev.payload_hash]
    old = fold_run(earlier) if earlier else None

    found, stale = touch_event(conn, ev)
    parent_job = None
    if ev.parent is not None:
        parent_job = jobs.touch_job_row(
            conn, ev.parent.namespace, ev.parent.name, ev.event_time
        ).uuid
        if ev.parent.run_id != run_uuid:
            touch_placeholder_run(conn, ev.parent.run_id, parent_job, ev.event_time)
    job = jobs.touch_job_row(conn, ev.job_namespace, ev.job_name, ev.event_time)
    job_changed = jobs.merge_job_event(conn, job, ev, parent_job)
    for row in sorted(found.values(), key=lambda r: r.uuid):
        if row.uuid in stale:
            refresh_dataset(conn, row.uuid, row.facets)
    if job_changed:
        jobs.refresh_job(conn, job.uuid)

    datasets = {k: (row.uuid, row.is_lake) for k, row in found.items()}
    missing = sorted({*run.inputs, *run.outputs} - set(datasets))
    datasets.update(_lookup_datasets(conn, missing))
    uuids = {k: v[0] for k, v in datasets.items()}
    lake = {v[0] for v in datasets.values() if v[1]}

    job_uuid = keys.job_uuid(run.job_namespace, run.job_name)
    # The stored version is a function of the earlier fold, so it need not be read back.
    previous = (
        keys.job_version_uuid(
            keys.job_uuid(old.job_namespace, old.job_name),
            fx.job_fingerprint(list(old.inputs), list(old.outputs), old.job_facets),
        )
        if old is not None
        else None
    )
    version, _ = jobs.ensure_job_version(
        conn,
        job_uuid,
        {k: uuids[k] for k in run.inputs},
        {k: uuids[k] for k in run.outputs},
        run.job_facets,
        run.created_at,
    )
    _write_run(conn, run, job_uuid, version, old)

    for key, io in sorted(run.outputs.items()):
        if not _same_output(old, run, key):
            versions.write_output(conn, run, io, uuids[key], uuids[key] in lake, fresh=old is None)
    settle: set[str] = set()
    retimed = old is None or old.bind_time != run.bind_time
    if old is None or retimed or _labels(old) != _labels(run):
        settle = versions.bind_inputs(conn, run, uuids, lake, fresh=old is None, retimed=retimed)
    moved: set[str] = set()
    for key in sorted(run.outputs):
        dataset = uuids[key]
        before, after = _output_signature(old, key), _output_signature(run, key)
        if dataset in lake or before == after:
            continue
        moved.add(dataset)
        sigs = [sig for sig in (before, after) if sig is not None]
        labels = {sig[1] for sig in sigs if sig[1] is not None}
        labels.add(keys.output_version_uuid(run_uuid, dataset))
        since = min((sig[0] for sig in sigs if sig[2]), default=None)
        for consumer in versions.consumers_since(conn, dataset, run, since, labels):
            settle |= rebind(conn, consumer)
    for dataset in sorted(settle - lake):
        versions.settle(conn, dataset, False)
    for dataset in sorted(moved - settle):
        versions.set_current(conn, dataset)
    if previous is not None and previous != version:
        jobs.refresh_job_versions(conn, {previous, version})
    else:
        jobs.widen_job_version(conn, version, run_uuid, run.created_at, run.updated_at)
        if job.uuid == job_uuid:
            jobs.refresh_current_version(conn, job_uuid, job.fold_state, job.current_version)
        else:
            jobs.refresh_current_version(conn, job_uuid)
    return run


def rebind(conn: Connection, run_uuid: str) -> set[str]:
    """Re-bind one run's inputs (its own state is unchanged)."""
    events = load_events(conn, run_uuid)
    if not events:
        return set()
    run = fold_run(events)
    datasets = _lookup_datasets(conn, sorted(run.inputs))
    return versions.bind_inputs(
        conn,
        run,
        {k: v[0] for k, v in datasets.items()},
        {v[0] for v in datasets.values() if v[1]},
        retimed=False,
    )


def _write_run(
    conn: Connection, run: RunFold, job_uuid: str, version: str, old: RunFold | None
) -> None:
    r, rs = s.runs, s.run_states
    nominal_start, nominal_end = fx.nominal_times(run.facets)
    error = fx.get(run.facets, "errorMessage") or None
    values: dict[str, Any] = {
        "job_uuid": job_uuid,
        "job_version_uuid": version,
        "parent_run_uuid": run.parent.run_id if run.parent else None,
        "state": run.state,
        "nominal_start_time": nominal_start,
        "nominal_end_time": nominal_end,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "transitioned_at": run.transitioned_at,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "facets": run.facets,
        "error": error,
    }
    conn.execute(upsert(conn, r, ["uuid", *values], ["uuid"]), {"uuid": run.run_id, **values})
    if old is not None and old.transitions == run.transitions:
        return
    if old is not None:
        conn.execute(
            cached(
                ("run-states-clear",),
                lambda: rs.delete().where(rs.c.run_uuid == sa.bindparam("r")),
            ),
            {"r": run.run_id},
        )
    if run.transitions:
        conn.execute(
            rs.insert(),
            [
                {
                    "uuid": keys.run_state_uuid(run.run_id, digest),
                    "run_uuid": run.run_id,
                    "state": state,
                    "transitioned_at": at,
                    "event_uuid": keys.event_uuid(digest),
                }
                for state, at, digest in run.transitions
            ],
        )
