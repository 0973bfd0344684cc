"""Ingest OpenLineage events: one SQL transaction per event or per batch.

The raw event is kept in ``lineage_events`` (an identical event is a no-op)
and the model is kept equal to a function of the stored event set: a run
event brings its run's rows up to the fold of all of its events (see
:mod:`strata.lineage.runs`), a JobEvent upserts the job, its io
edges and a job version, a DatasetEvent upserts the dataset and its facets.
A DatasetEvent creates no dataset version: it says what a dataset looks
like, not that new data was written; versions come from run outputs and
lake commits. Invalid events store nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import InvalidEvent, StoreError, StrataError
from strata.lineage import jobs, keys, runs
from strata.lineage import rows as rowlib
from strata.lineage.events import Event, parse_event
from strata.lineage.validate import EventKind
from strata.store import schema as s
from strata.store.engine import write_tx

_PG_LOCK_KEY = 0x4C696E65  # serialises lineage writers on PostgreSQL; SQLite locks at BEGIN


@dataclass(frozen=True)
class IngestResult:
    """What one event did."""

    kind: EventKind
    event_uuid: str
    payload_hash: str
    event_time: datetime
    run_id: str | None
    job_namespace: str | None
    job_name: str | None
    duplicate: bool


_LOCK = sa.text("SELECT pg_advisory_xact_lock(:k)")


def _lock(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(_LOCK, {"k": _PG_LOCK_KEY})


def ingest_event(
    engine: Engine, payload: dict[str, Any], *, received_at: datetime | None = None
) -> IngestResult:
    """Validate and store one event; raises :class:`InvalidEvent` and stores nothing if bad."""
    return store_event(engine, parse_event(payload), received_at or datetime.now(UTC))


def store_event(engine: Engine, event: Event, received: datetime) -> IngestResult:
    """Store one parsed event in its own SQL transaction."""
    try:
        with write_tx(engine) as conn:
            _lock(conn)
            [result] = _store_and_apply(conn, [event], received)
    except sa.exc.IntegrityError as exc:
        raise _conflict(exc) from exc
    return result


def _conflict(exc: sa.exc.IntegrityError) -> InvalidEvent:
    return InvalidEvent(f"event conflicts with stored lineage: {exc.orig}", path="$")


def _result(event: Event, duplicate: bool) -> IngestResult:
    return IngestResult(
        kind=event.kind,
        event_uuid=keys.event_uuid(event.payload_hash),
        payload_hash=event.payload_hash,
        event_time=event.event_time,
        run_id=event.run_id,
        job_namespace=event.job_namespace,
        job_name=event.job_name,
        duplicate=duplicate,
    )


def ingest_batch(
    engine: Engine, payloads: list[dict[str, Any]]
) -> list[IngestResult | StrataError]:
    """Ingest many events in one SQL transaction; one bad event does not stop the others."""
    parsed: list[Event | StrataError] = []
    for payload in payloads:
        try:
            parsed.append(parse_event(payload))
        except StrataError as exc:
            parsed.append(exc)
    return ingest_parsed(engine, parsed)


def ingest_parsed(
    engine: Engine, items: list[Event | StrataError]
) -> list[IngestResult | StrataError]:
    """Store already parsed events in one SQL transaction; errors pass through in place.

    The batch is first applied as a whole; if an event is refused, that attempt
    is rolled back and each event runs under its own savepoint, so a refused
    event leaves nothing behind and the result is what ingesting them one by
    one would give (savepoints cost two statements an event, which the common
    all-good batch does without). If the transaction itself fails (the store,
    not an event), every event is retried on its own so each gets its own answer.
    """
    parsed: list[Event | None] = [i if isinstance(i, Event) else None for i in items]
    out: list[IngestResult | StrataError | None] = [
        None if isinstance(i, Event) else i for i in items
    ]
    if not any(parsed):
        return [r for r in out if r is not None]
    received = datetime.now(UTC)
    try:
        return _batch_whole(engine, parsed, out, received)
    except _Refused:
        pass
    try:
        with write_tx(engine) as conn:
            _lock(conn)
            for i, event in enumerate(parsed):
                if event is not None:
                    out[i] = _ingest_nested(conn, event, received)
    except StoreError:
        # Results set inside the failed transaction were rolled back with it.
        return [i if isinstance(i, StrataError) else _one(engine, i, received) for i in items]
    return [r for r in out if r is not None]


class _Refused(Exception):
    """An event of a batch was refused: the batch is redone one savepoint per event."""


def _batch_whole(
    engine: Engine,
    parsed: list[Event | None],
    out: list[IngestResult | StrataError | None],
    received: datetime,
) -> list[IngestResult | StrataError]:
    done = list(out)
    events = [e for e in parsed if e is not None]
    try:
        with write_tx(engine) as conn:
            _lock(conn)
            try:
                results = iter(_store_and_apply(conn, events, received))
            except (sa.exc.IntegrityError, StrataError) as exc:
                raise _Refused from exc
    except StoreError as exc:  # the slower path answers each event on its own
        raise _Refused from exc
    for i, event in enumerate(parsed):
        if event is not None:
            done[i] = next(results)
    return [r for r in done if r is not None]


def _ingest_nested(
    conn: Connection, event: Event, received: datetime
) -> IngestResult | StrataError:
    try:
        with conn.begin_nested():
            [result] = _store_and_apply(conn, [event], received)
    except sa.exc.IntegrityError as exc:
        return _conflict(exc)
    except StrataError as exc:
        return exc
    return result


def _one(engine: Engine, event: Event, received: datetime) -> IngestResult | StrataError:
    try:
        return store_event(engine, event, received)
    except StrataError as exc:
        return exc


def _store_and_apply(
    conn: Connection, events: list[Event], received: datetime
) -> list[IngestResult]:
    """Store the raw events and bring the model up to date with the new ones.

    Run events are applied as one group (see :func:`runs.apply_run_events`); the rarer
    job and dataset events one by one, first, since every write commutes.
    """
    new = _store(conn, events, received)
    fresh = [e for e, is_new in zip(events, new, strict=True) if is_new]
    for event in fresh:
        if event.kind == "JobEvent":
            _apply_job_event(conn, event)
        elif event.kind == "DatasetEvent":
            runs.touch_event_datasets(conn, event)
    runs.apply_run_events(conn, [e for e in fresh if e.kind == "RunEvent"])
    return [_result(e, not is_new) for e, is_new in zip(events, new, strict=True)]


def _store(conn: Connection, events: list[Event], received: datetime) -> list[bool]:
    """Insert the raw events; per event, False if an identical one is already stored
    (or comes earlier in ``events``)."""
    rows: dict[str, dict[str, Any]] = {}
    for event in events:
        rows.setdefault(
            event.payload_hash,
            {
                "uuid": keys.event_uuid(event.payload_hash),
                "run_uuid": event.run_id,
                "event_type": event.event_type,
                "event_time": event.event_time,
                "received_at": received,
                "producer": event.producer,
                "job_namespace": event.job_namespace,
                "job_name": event.job_name,
                "payload": event.payload,
                "payload_hash": event.payload_hash,
            },
        )
    inserted = rowlib.insert_ignore_many(
        conn, s.lineage_events, list(rows.values()), ["payload_hash"]
    )
    out = []
    for event in events:
        out.append(event.payload_hash in inserted)
        inserted.discard(event.payload_hash)
    return out


def _apply_job_event(conn: Connection, event: Event) -> None:
    assert event.job_namespace is not None and event.job_name is not None
    job = jobs.touch_job(conn, event.job_namespace, event.job_name, event.event_time)
    jobs.merge_job_event(conn, job, event, None)
    datasets = runs.touch_event_datasets(conn, event)
    for dataset in sorted(set(datasets.values())):
        rowlib.refresh_dataset(conn, dataset)
    jobs.refresh_job(conn, job)
    version, fingerprint = jobs.ensure_job_version(
        conn,
        job,
        {d.key: datasets[d.key] for d in event.inputs},
        {d.key: datasets[d.key] for d in event.outputs},
        event.job_facets,
        event.event_time,
    )
    jobs.add_static_version(conn, job, fingerprint, event.stamp())
    jobs.refresh_job_versions(conn, {version})
