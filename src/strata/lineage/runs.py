"""Re-derive everything one run determines from all of its stored events."""

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
    insert_ignore,
    merge_dataset_facets,
    refresh_dataset,
    touch_dataset,
    touch_source,
    widen_times,
)
from strata.store import schema as s


def load_events(conn: Connection, run_uuid: str) -> list[Event]:
    e = s.lineage_events
    rows = conn.execute(sa.select(e.c.payload).where(e.c.run_uuid == run_uuid))
    payloads: list[Any] = list(rows.scalars().all())
    return [parse_event(p, check=False) for p in payloads]


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
    own = conn.execute(sa.select(e.c.uuid).where(e.c.run_uuid == run_uuid).limit(1)).first()
    if own is None:
        widen_times(conn, r, r.c.uuid == run_uuid, at)


def touch_event_datasets(conn: Connection, ev: Event) -> dict[tuple[str, str], str]:
    """Create the event's datasets and fold its dataset facets into them."""
    out: dict[tuple[str, str], str] = {}
    refs = (*ev.inputs, *ev.outputs, *((ev.dataset,) if ev.dataset else ()))
    for ref in refs:
        uuid = touch_dataset(conn, ref.namespace, ref.name, ev.event_time)
        merge_dataset_facets(conn, uuid, ref.facets, ev.stamp())
        source = fx.data_source(ref.facets)
        if source is not None:
            touch_source(conn, source[0], source[1], ev.event_time)
        out[ref.key] = uuid
    return out


def recompute_run(conn: Connection, run_uuid: str) -> RunFold | None:
    """Rewrite the run and what it owns from its events; re-bind affected consumers."""
    events = load_events(conn, run_uuid)
    if not events:
        return None
    run = fold_run(events)
    r = s.runs
    previous = conn.execute(sa.select(r.c.job_version_uuid).where(r.c.uuid == run_uuid)).scalar()

    touched_jobs: set[str] = set()
    datasets: dict[tuple[str, str], str] = {}
    for ev in run.events:
        assert ev.job_namespace is not None and ev.job_name is not None
        parent_job = None
        if ev.parent is not None:
            parent_job = jobs.touch_job(conn, ev.parent.namespace, ev.parent.name, ev.event_time)
            touched_jobs.add(parent_job)
            if ev.parent.run_id != run_uuid:
                touch_placeholder_run(conn, ev.parent.run_id, parent_job, ev.event_time)
        job = jobs.touch_job(conn, ev.job_namespace, ev.job_name, ev.event_time)
        touched_jobs.add(job)
        jobs.merge_job_event(conn, job, ev, parent_job)
        datasets.update(touch_event_datasets(conn, ev))
    for dataset in sorted(set(datasets.values())):
        refresh_dataset(conn, dataset)
    for job in sorted(touched_jobs):
        jobs.refresh_job(conn, job)

    job_uuid = keys.job_uuid(run.job_namespace, run.job_name)
    version, _ = jobs.ensure_job_version(
        conn,
        job_uuid,
        {k: datasets[k] for k in run.inputs},
        {k: datasets[k] for k in run.outputs},
        run.job_facets,
        run.created_at,
    )
    _write_run(conn, run, job_uuid, version)

    for key, io in sorted(run.outputs.items()):
        versions.write_output(conn, run, io, datasets[key])
    affected = versions.bind_inputs(conn, run, datasets)
    for key in sorted(run.outputs):
        dataset = datasets[key]
        affected.add(dataset)
        if versions.is_lake(conn, dataset):
            continue
        for consumer in versions.consumers_since(conn, dataset, run):
            affected |= rebind(conn, consumer)
    for dataset in sorted(affected):
        versions.settle(conn, dataset)
    jobs.refresh_job_versions(conn, {version} | ({previous} if previous else set()))
    return run


def rebind(conn: Connection, run_uuid: str) -> set[str]:
    """Re-bind one run's inputs (its own state is unchanged)."""
    events = load_events(conn, run_uuid)
    if not events:
        return set()
    run = fold_run(events)
    d = s.datasets
    datasets: dict[tuple[str, str], str] = {}
    for ns, name in run.inputs:
        found: Any = conn.execute(
            sa.select(d.c.uuid).where(d.c.namespace == ns, d.c.name == name)
        ).scalar_one()
        datasets[(ns, name)] = str(found)
    return versions.bind_inputs(conn, run, datasets)


def _write_run(conn: Connection, run: RunFold, job_uuid: str, version: str) -> None:
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
    if not insert_ignore(conn, r, {"uuid": run.run_id, **values}, ["uuid"]):
        conn.execute(r.update().where(r.c.uuid == run.run_id).values(**values))
    conn.execute(rs.delete().where(rs.c.run_uuid == run.run_id))
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
