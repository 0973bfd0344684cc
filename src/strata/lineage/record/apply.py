"""Apply OpenLineage events to the model: one SQL transaction per event or per batch.

The raw event is kept in ``lineage_events`` (an identical event is a no-op)
and the model is kept equal to a function of the stored event set: a run
event brings its run's rows up to the fold of all of its events (see
:mod:`strata.lineage.record.runs`), a JobEvent upserts the job, its io
edges and a job version, a DatasetEvent upserts the dataset and its facets and
declares a version of it (as Marquez makes one; see
:func:`strata.lineage.record.versions.declare`). Invalid events store nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata import ids
from strata.errors import InvalidEvent, StoreConflict, StoreError, StoreRefused, StrataError
from strata.lineage.record import jobs, runs, versions
from strata.lineage.record.events import Event, parse_event
from strata.lineage.record.validate import EventKind
from strata.store import jsoncodec
from strata.store.deferred import deferred_writes
from strata.store.engine import StatementConnection, read_tx, write_tx
from strata.store.errors import mapped
from strata.store.owners import event_queue
from strata.store.owners import events as stored_events

log = logging.getLogger(__name__)

_PG_LOCK_KEY = 0x4C696E65  # serialises lineage writers on PostgreSQL; SQLite locks at BEGIN


@dataclass(frozen=True)
class RecordResult:
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


# Every lookup of the fold is by key, and one group's rows are written and then read in
# one transaction: PostgreSQL's statistics of a store that grew a moment ago can make a
# scan of a whole table look cheaper than the index (seen: 800 ms instead of 6 ms for a
# group's current versions), so the fold's transaction plans with scans priced out. Nor
# does it start parallel workers, or compile plans (JIT): with scans priced out, plans
# look costly enough for both, and starting a worker (3-5 ms) or compiling a plan (7-110
# ms, seen on most of a fold's statements once the store held some history) took far
# longer than the lookups themselves.
_INDEXED = (
    "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; "
    "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL jit = off"
)


def lock_writers(conn: Connection) -> None:
    """Take the writer lock (PostgreSQL; SQLite locks at BEGIN) and plan by index."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(_INDEXED)
        conn.execute(_LOCK, {"k": _PG_LOCK_KEY})


def record_event(
    engine: Engine, payload: dict[str, Any], *, received_at: datetime | None = None
) -> RecordResult:
    """Validate and store one event; raises :class:`InvalidEvent` and stores nothing if bad."""
    return store_event(engine, parse_event(payload), received_at or datetime.now(UTC))


def store_event(engine: Engine, event: Event, received: datetime) -> RecordResult:
    """Store one parsed event and fold it in, in its own SQL transaction."""
    result = _one(engine, event, received)
    if isinstance(result, StrataError):
        raise result
    return result


def _conflict(exc: StoreConflict) -> InvalidEvent:
    return InvalidEvent(f"event conflicts with stored lineage: {exc.message}", path="$")


def _result(event: Event, duplicate: bool) -> RecordResult:
    return RecordResult(
        kind=event.kind,
        event_uuid=ids.event_uuid(event.payload_hash),
        payload_hash=event.payload_hash,
        event_time=event.event_time,
        run_id=event.run_id,
        job_namespace=event.job_namespace,
        job_name=event.job_name,
        duplicate=duplicate,
    )


def record_batch(
    engine: Engine, payloads: list[dict[str, Any]]
) -> list[RecordResult | StrataError]:
    """Ingest many events in one SQL transaction; one bad event does not stop the others."""
    parsed: list[Event | StrataError] = []
    for payload in payloads:
        try:
            parsed.append(parse_event(payload))
        except StrataError as exc:
            parsed.append(exc)
    return record_parsed(engine, parsed)


def record_parsed(
    engine: Engine, items: list[Event | StrataError]
) -> list[RecordResult | StrataError]:
    """Store already parsed events and fold them into the model, in one SQL transaction;
    errors pass through in place."""
    return _in_groups(engine, items)


def accept_parsed(
    engine: Engine,
    journal: Engine,
    items: list[Event | StrataError],
    *,
    statements: StatementConnection | None = None,
) -> list[RecordResult | StrataError]:
    """Queue already parsed events for :func:`fold_pending` in ``journal``, one SQL
    statement (on ``statements``, a connection to ``journal`` its caller keeps); errors
    pass through in place.

    What the server acknowledges: the event is durable and valid, and everything that
    could refuse it has been checked. It does not wait for the fold: on PostgreSQL the
    queue is a table the fold's lock does not cover, on SQLite a file of its own.
    ``engine`` is the store, read for those checks (only events naming a version need
    it). A result's ``duplicate`` says the event was queued already; one stored already
    is queued again and the fold finds it stored (looking it up here cost every group a
    read of the store, for the rare client that sends an event again).
    """
    out: list[RecordResult | StrataError | None] = [
        None if isinstance(item, Event) else item for item in items
    ]
    events = [(at, item) for at, item in enumerate(items) if isinstance(item, Event)]
    labelled = {id(ev) for ev, _, _ in versions.labelled_outputs([ev for _, ev in events])}
    if labelled:
        with read_tx(engine) as store:
            for at, ev in events:
                if id(ev) in labelled:
                    try:
                        versions.check_lake_outputs(store, [ev])
                    except StrataError as exc:
                        out[at] = exc
    todo = [(at, ev) for at, ev in events if out[at] is None]
    received = datetime.now(UTC)
    held = statements if statements is not None else StatementConnection(journal)
    results: list[RecordResult | StrataError]
    try:
        results = list(_queue_alone(held, [ev for _, ev in todo], received))
    except (StoreConflict, StoreRefused):
        # One event the queue would not take: each goes alone, so only it is refused.
        results = [_queue_one(held, ev, received) for _, ev in todo]
    except StoreError as exc:
        results = [exc] * len(todo)
    finally:
        if statements is None:
            held.close()
    for (at, _), result in zip(todo, results, strict=True):
        out[at] = result
    return [r for r in out if r is not None]


def _queue_alone(
    statements: StatementConnection, events: list[Event], received: datetime
) -> list[RecordResult]:
    """Queue ``events`` in one statement, committed by itself."""
    if not events:
        return []
    with statements.tx() as conn:
        return _queue(conn, events, received)


def _queue_one(
    statements: StatementConnection, event: Event, received: datetime
) -> RecordResult | StrataError:
    try:
        [result] = _queue_alone(statements, [event], received)
    except StoreConflict as exc:
        return _conflict(exc)
    except StoreRefused as exc:
        return InvalidEvent(f"the store cannot keep this event: {exc.message}", path="$")
    except StrataError as exc:
        return exc
    return result


def _in_groups(
    engine: Engine, items: list[Event | StrataError]
) -> list[RecordResult | StrataError]:
    """Store and apply the events of ``items`` in one SQL transaction under the writer
    lock.

    The batch is first taken as a whole; if an event is refused, that attempt
    is rolled back and each event runs under its own savepoint, so a refused
    event leaves nothing behind and the result is what ingesting them one by
    one would give (savepoints cost two statements an event, which the common
    all-good batch does without). If the transaction itself fails (the store,
    not an event), every event is retried on its own so each gets its own answer.
    """
    parsed: list[Event | None] = [i if isinstance(i, Event) else None for i in items]
    out: list[RecordResult | StrataError | None] = [
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
            lock_writers(conn)
            for i, event in enumerate(parsed):
                if event is not None:
                    out[i] = _nested(conn, event, received)
    except StoreError:
        # Results set inside the failed transaction were rolled back with it.
        return [i if isinstance(i, StrataError) else _one(engine, i, received) for i in items]
    return [r for r in out if r is not None]


class _Refused(Exception):
    """An event of a batch was refused: the batch is redone one savepoint per event."""


def _batch_whole(
    engine: Engine,
    parsed: list[Event | None],
    out: list[RecordResult | StrataError | None],
    received: datetime,
) -> list[RecordResult | StrataError]:
    done = list(out)
    events = [e for e in parsed if e is not None]
    try:
        with write_tx(engine) as conn:
            lock_writers(conn)
            try:
                with mapped():
                    results = iter(_store_and_apply(conn, events, received))
            except StrataError as exc:
                raise _Refused from exc
    except StoreError as exc:  # the slower path answers each event on its own
        raise _Refused from exc
    for i, event in enumerate(parsed):
        if event is not None:
            done[i] = next(results)
    return [r for r in done if r is not None]


def _nested(conn: Connection, event: Event, received: datetime) -> RecordResult | StrataError:
    """One event stored and applied under a savepoint: its result, or why it was refused."""
    try:
        with mapped(), conn.begin_nested():
            [result] = _store_and_apply(conn, [event], received)
    except StoreConflict as exc:
        return _conflict(exc)
    except StrataError as exc:
        return exc
    return result


def _one(engine: Engine, event: Event, received: datetime) -> RecordResult | StrataError:
    try:
        with write_tx(engine) as conn:
            lock_writers(conn)
            [result] = _store_and_apply(conn, [event], received)
    except StoreConflict as exc:
        return _conflict(exc)
    except StrataError as exc:
        return exc
    return result


def _store_and_apply(
    conn: Connection, events: list[Event], received: datetime | Mapping[str, datetime]
) -> list[RecordResult]:
    """Store the raw events and bring the model up to date with the new ones."""
    new = _store(conn, events, received)
    with deferred_writes(conn):
        _apply(conn, [e for e, is_new in zip(events, new, strict=True) if is_new])
    return [_result(e, not is_new) for e, is_new in zip(events, new, strict=True)]


def _queue(queue: Connection, events: list[Event], received: datetime) -> list[RecordResult]:
    """Queue the events for the fold; an event queued already is a duplicate."""
    queued = event_queue.enqueue(
        queue, {ev.payload_hash: ev.json_text() for ev in events}, received
    )
    out = []
    for ev in events:
        out.append(_result(ev, ev.payload_hash not in queued))
        queued.discard(ev.payload_hash)
    return out


def _apply(conn: Connection, fresh: list[Event]) -> None:
    """Bring the model up to date with ``fresh``, events stored but not yet folded.

    Run events are applied as one group (see :func:`runs.apply_run_events`); the rarer
    job and dataset events one by one, first, since every write commutes.
    """
    for event in fresh:
        if event.kind == "JobEvent":
            _apply_job_event(conn, event)
    runs.apply_dataset_events(conn, [e for e in fresh if e.kind == "DatasetEvent"])
    runs.apply_run_events(conn, [e for e in fresh if e.kind == "RunEvent"])


@dataclass(frozen=True)
class Folded:
    """What one :func:`fold_pending` call did: the events folded and those refused, by
    payload hash."""

    folded: list[str]
    refused: dict[str, str]

    def __len__(self) -> int:
        return len(self.folded) + len(self.refused)


def fold_pending(
    engine: Engine, journal: Engine, limit: int, known: Mapping[str, Event] | None = None
) -> Folded:
    """Fold up to ``limit`` queued events (oldest first) into the store: each is stored
    in ``lineage_events`` and applied, one SQL transaction under the writer lock. With
    the queue in the store (PostgreSQL), the events are claimed and parsed before the
    lock, and another fold running at once takes others.

    ``known`` holds events already parsed by this process, by payload hash; the others
    are parsed from the queue. An event the fold refuses (the store would not take its
    rows) keeps its queue row with the reason and is not tried again. With the queue in
    another database (SQLite) its rows go after the store commits; if the process dies in
    between, the next fold finds those events stored already and only drops their rows.
    """
    known = known or {}
    queued = None
    if journal is not engine:
        with read_tx(journal) as jconn:
            queued = _queued(jconn, limit, known)
    with write_tx(engine) as conn:
        if queued is None:
            # The group is claimed, read and parsed before the writer lock: another
            # fold (a replica's) writes meanwhile, and this one's group is not its.
            early = _queued(conn, limit, known, claim=True)
            lock_writers(conn)
            # Then topped up with what came meanwhile: the group stays as large as a
            # fold that waited first would take, and an empty one means every fold under
            # way has committed (a replica's readers wait for events another took).
            parsed = {**known, **{event.payload_hash: event for event, _ in early}}
            queued = _queued(conn, limit, parsed, claim=True)
        else:
            lock_writers(conn)
        if not queued:
            return Folded([], {})
        events = [event for event, _ in queued]
        received = {event.payload_hash: at for event, at in queued}
        refused: dict[str, str] = {}
        try:
            with mapped(), conn.begin_nested():
                _store_and_apply(conn, events, received)
        except StoreError:  # the store itself failing: the fold is retried later
            raise
        except Exception:  # an event of the group was refused: find which, one by one
            for event in events:
                why = _nested_apply(conn, event, received)
                if why is not None:
                    refused[event.payload_hash] = why
        done = [ev.payload_hash for ev in events if ev.payload_hash not in refused]
        if journal is engine:
            event_queue.settle(conn, done, refused)
    if journal is not engine:
        with write_tx(journal) as jconn:
            event_queue.settle(jconn, done, refused)
    return Folded(done, refused)


def _queued(
    conn: Connection, limit: int, known: Mapping[str, Event], *, claim: bool = False
) -> list[tuple[Event, datetime]]:
    """The oldest ``limit`` queued events and when each was received; payloads are read
    (and parsed) only for those not in ``known``. ``claim``: events no other transaction
    has claimed, claimed for this one (see :func:`event_queue.head`)."""
    found = event_queue.head(conn, limit, claim=claim)
    found = found[: _group([q.size for q in found])]
    queue: list[tuple[str, datetime]] = [(q.payload_hash, q.received_at) for q in found]
    parsed = {h: known[h] for h, _ in queue if h in known}
    parsed.update(_payloads(conn, [h for h, _ in queue if h not in parsed]))
    return [(parsed[h], at) for h, at in queue]


# A fold takes at most this much JSON (events of several MB are allowed: a group of a
# thousand of them, parsed, would not fit in memory), and always at least one event.
_GROUP_BYTES = 32 * 1024 * 1024


def _group(sizes: Sequence[int]) -> int:
    """How many of the queue's oldest events, of these JSON sizes, one fold takes."""
    total = 0
    for taken, size in enumerate(sizes):
        total += size
        if total > _GROUP_BYTES and taken:
            return taken
    return len(sizes)


def _payloads(conn: Connection, hashes: Sequence[str]) -> dict[str, Event]:
    """The queued events of ``hashes``, parsed, by payload hash."""
    # The fold stores the text as it is instead of serialising the document again.
    return {
        digest: parse_event(jsoncodec.loads(text), check=False, digest=digest, text=text)
        for digest, text in event_queue.texts(conn, hashes)
    }


def still_queued(journal: Engine, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` wait in the queue for a fold (not folded, not refused)."""
    with read_tx(journal) as conn:
        return event_queue.waiting(conn, hashes)


def _nested_apply(conn: Connection, event: Event, received: Mapping[str, datetime]) -> str | None:
    """Fold one event under a savepoint; why it was refused, or None."""
    try:
        with mapped(), conn.begin_nested():
            _store_and_apply(conn, [event], received)
    except StoreError:  # the store itself failing: the fold is retried later
        raise
    except StoreConflict as exc:
        return _conflict(exc).message
    except StrataError as exc:
        return exc.message
    except Exception as exc:  # stored and acknowledged: set aside, never retried forever
        log.exception("folding lineage event %s failed", ids.event_uuid(event.payload_hash))
        return f"the fold failed: {exc!r}"
    return None


def _store(
    conn: Connection, events: list[Event], received: datetime | Mapping[str, datetime]
) -> list[bool]:
    """Insert the raw events, received at ``received`` (one time, or one per payload
    hash); per event, False if an identical one is already stored (or comes earlier in
    ``events``)."""
    rows: dict[str, stored_events.NewEvent] = {}
    for event in events:
        if event.payload_hash in rows:
            continue
        rows[event.payload_hash] = stored_events.NewEvent(
            uuid=ids.event_uuid(event.payload_hash),
            run_uuid=event.run_id,
            event_type=event.event_type,
            event_time=event.event_time,
            received_at=(
                received if isinstance(received, datetime) else received[event.payload_hash]
            ),
            producer=event.producer,
            job_namespace=event.job_namespace,
            job_name=event.job_name,
            payload=event.stored_payload(),
            payload_hash=event.payload_hash,
        )
    inserted = stored_events.store(conn, list(rows.values()))
    out = []
    for event in events:
        out.append(event.payload_hash in inserted)
        inserted.discard(event.payload_hash)
    return out


def _apply_job_event(conn: Connection, event: Event) -> None:
    assert event.job_namespace is not None and event.job_name is not None
    job = jobs.touch_job(conn, event.job_namespace, event.job_name, event.event_time)
    jobs.merge_job_event(conn, job, event, None)
    datasets = {key: row.uuid for key, row in runs.touch_event_datasets(conn, event).items()}
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
