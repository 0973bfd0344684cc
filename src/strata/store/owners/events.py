"""Stored lineage events: every event as it was received, once per payload hash.

The only module that reads or writes ``lineage_events``. The fold stores each event
before applying it (an identical event is a no-op); the Marquez event lists, the stats
and a run's own job facets read them back; lineage retention deletes a run's events
with the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import lineage_events

_E = lineage_events


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to store; ``payload`` is what the store keeps of it."""

    uuid: str
    run_uuid: str | None
    event_type: str | None
    event_time: datetime
    received_at: datetime
    producer: str | None
    job_namespace: str | None
    job_name: str | None
    payload: Any
    payload_hash: str


# --- writes -----------------------------------------------------------------------------


def store(conn: Connection, events: Sequence[NewEvent]) -> set[str]:
    """Store each event unless one with its payload hash is stored (one statement); the
    payload hashes of those stored now."""
    rows = [
        {
            "uuid": e.uuid,
            "run_uuid": e.run_uuid,
            "event_type": e.event_type,
            "event_time": e.event_time,
            "received_at": e.received_at,
            "producer": e.producer,
            "job_namespace": e.job_namespace,
            "job_name": e.job_name,
            "payload": e.payload,
            "payload_hash": e.payload_hash,
        }
        for e in events
    ]
    return {str(h) for h in bulk.insert_ignore_many(conn, _E, rows, ["payload_hash"])}


def delete_of_runs(conn: Connection, run_uuids: Sequence[str]) -> int:
    """Delete the events of these runs; how many went."""
    return int(conn.execute(_E.delete().where(_E.c.run_uuid.in_(run_uuids))).rowcount)


# --- reads of runs' events --------------------------------------------------------------


def hashes_of_runs(conn: Connection, run_uuids: Sequence[str]) -> list[tuple[str, str]]:
    """(run uuid, payload hash) of every event of these runs."""
    stmt = bulk.select_by_ids(
        "run-event-hashes", conn, _E.c.run_uuid, _E.c.run_uuid, _E.c.payload_hash
    )
    return [(str(run), str(h)) for run, h in bulk.rows_by_ids(conn, stmt, sorted(run_uuids))]


def payloads(conn: Connection, hashes: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """(payload hash, stored payload) of the events with these hashes."""
    stmt = bulk.select_by_ids(
        "event-payloads", conn, _E.c.payload_hash, _E.c.payload_hash, _E.c.payload
    )
    for digest, payload in bulk.rows_by_ids(conn, stmt, sorted(hashes)):
        yield str(digest), payload


def run_has_own(conn: Connection, run_uuid: str) -> bool:
    """Whether any event was about this run itself, rather than naming it as a parent."""
    stmt = bulk.cached(
        ("run-has-events",),
        lambda: sa.select(_E.c.uuid).where(_E.c.run_uuid == sa.bindparam("r")).limit(1),
    )
    return conn.execute(stmt, {"r": run_uuid}).first() is not None


def payloads_of_run(conn: Connection, run_uuid: str) -> list[Any]:
    """The stored payloads of a run's own events, by event time (ties by id)."""
    rows = conn.execute(
        sa.select(_E.c.payload)
        .where(_E.c.run_uuid == run_uuid)
        .order_by(_E.c.event_time, _E.c.uuid)
    )
    return [row.payload for row in rows]


def latest_types(conn: Connection, run_uuids: Sequence[str]) -> dict[str, str]:
    """The type of each run's latest typed event (ties: the one read last), by run."""
    latest: dict[str, tuple[datetime, str]] = {}
    for row in conn.execute(
        sa.select(_E.c.run_uuid, _E.c.event_time, _E.c.event_type).where(
            _E.c.run_uuid.in_(sorted(run_uuids)), _E.c.event_type.is_not(None)
        )
    ):
        if row.run_uuid not in latest or row.event_time >= latest[row.run_uuid][0]:
            latest[row.run_uuid] = (row.event_time, row.event_type)
    return {run: kind for run, (_, kind) in latest.items()}


def count_of_runs(conn: Connection, run_uuids: sa.Select[Any]) -> int:
    """How many events the runs of the query ``run_uuids`` have."""
    count = sa.select(sa.func.count()).where(_E.c.run_uuid.in_(run_uuids))
    return int(conn.execute(count).scalar() or 0)


# --- the event lists --------------------------------------------------------------------


def page_of_run_events(
    conn: Connection,
    before: datetime | None,
    after: datetime | None,
    ascending: bool,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Run events (those with a run) by event time (``ix_lineage_events_time``), within
    ``after``..``before`` inclusive, and how many there are."""
    conds: list[sa.ColumnElement[bool]] = [_E.c.run_uuid.is_not(None)]
    if before is not None:
        conds.append(_E.c.event_time <= before)
    if after is not None:
        conds.append(_E.c.event_time >= after)
    order = (
        [_E.c.event_time, _E.c.uuid] if ascending else [_E.c.event_time.desc(), _E.c.uuid.desc()]
    )
    rows = conn.execute(
        sa.select(_E.c.payload).where(*conds).order_by(*order).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(_E).where(*conds)).scalar_one()
    return [dict(r.payload) for r in rows], int(total)


# An event touches a namespace through its job, its DatasetEvent dataset, or any input or
# output. Marquez checks the job and the inputs and outputs only.
_IN_NAMESPACE = {
    "postgresql": """(
        job_namespace = :ns
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'dataset', jsonb_build_object('namespace', CAST(:ns AS text)))
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'inputs', jsonb_build_array(jsonb_build_object('namespace', CAST(:ns AS text))))
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'outputs', jsonb_build_array(jsonb_build_object('namespace', CAST(:ns AS text)))))""",
    "sqlite": """(
        job_namespace = :ns
        OR json_extract(payload, '$.dataset.namespace') = :ns
        OR EXISTS (SELECT 1 FROM json_each(payload, '$.inputs')
                   WHERE type = 'object' AND json_extract(value, '$.namespace') = :ns)
        OR EXISTS (SELECT 1 FROM json_each(payload, '$.outputs')
                   WHERE type = 'object' AND json_extract(value, '$.namespace') = :ns))""",
}


def newest(
    conn: Connection, limit: int, offset: int, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Events of every kind by event time, newest first (ties by id, so pages do not
    overlap): all of them, or those touching ``namespace``."""
    query = sa.select(_E.c.payload)
    if namespace is not None:
        query = query.where(sa.text(_IN_NAMESPACE[conn.dialect.name]).bindparams(ns=namespace))
    rows = conn.execute(
        query.order_by(_E.c.event_time.desc(), _E.c.uuid.desc()).limit(limit).offset(offset)
    ).all()
    return [dict(r.payload) for r in rows]


def counts_by_type(
    conn: Connection, start: datetime, ends: Sequence[datetime], types: Sequence[str]
) -> list[dict[str, int]]:
    """How many events of each of ``types`` fall in each interval: the first from
    ``start`` to ``ends[0]``, each next one up to its end (``ix_lineage_events_time``)."""
    bucket = sa.case(*[(_E.c.event_time < end, i) for i, end in enumerate(ends)])
    inner = (
        sa.select(bucket.label("bucket"), _E.c.event_type)
        .where(_E.c.event_time >= start, _E.c.event_time < ends[-1], _E.c.event_type.in_(types))
        .subquery()
    )
    counts: list[dict[str, int]] = [dict.fromkeys(types, 0) for _ in ends]
    for row in conn.execute(
        sa.select(inner.c.bucket, inner.c.event_type, sa.func.count()).group_by(
            inner.c.bucket, inner.c.event_type
        )
    ):
        counts[row.bucket][row.event_type] = int(row[2])
    return counts
