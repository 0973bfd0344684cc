"""Jobs: identity, parents and names, aliases, versions.

A job is keyed by its namespace and the name its events use (the "raw"
name, kept in ``fold_state``). Its parent is the one named by the latest
event (by event time) that carried a parent facet, and it sticks: an event
without a parent facet never removes it. The stored ``name`` is the FQN:
the parent's FQN, a dot, and the simple name (the raw name without the
parent's prefix, as Marquez does). When the raw name differs from the FQN
it is kept in ``job_aliases`` so a lookup by it can redirect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.lineage.record import facets as fx
from strata.lineage.record.events import Event
from strata.lineage.record.rows import merge_stamped, touch_namespace
from strata.store import schema as s
from strata.store.bulk import (
    cached,
    chunks,
    returning_many,
    update_rows,
    widening_upsert,
)
from strata.store.owners import job_versions as versions_of
from strata.store.owners import jobs as stored_jobs
from strata.store.owners.runs import rows as stored_runs

_MAX_DEPTH = 64


@dataclass
class JobRow:
    """A job's merge state, read back by the upsert that touched it."""

    uuid: str
    facets: dict[str, Any]
    fold_state: dict[str, Any]
    current_version: str | None = None


def touch_job_rows(
    conn: Connection, spans: dict[tuple[str, str], tuple[datetime, datetime]]
) -> dict[tuple[str, str], JobRow]:
    """Create (without parent) or widen jobs, not their namespaces, each to cover its
    ``(earliest, latest)`` times, and read them back in one statement."""
    if not spans:
        return {}
    t = s.jobs
    params = [
        {
            "uuid": ids.job_uuid(namespace, raw_name),
            "namespace": namespace,
            "simple_name": raw_name,
            "name": raw_name,
            "parent_key": "",
            "facets": {},
            "fold_state": {"raw": raw_name, "facets": {}, "parent": None, "static": {}},
            "created_at": lo,
            "updated_at": hi,
        }
        for (namespace, raw_name), (lo, hi) in sorted(spans.items())
    ]
    stmt = widening_upsert(
        conn,
        t,
        list(params[0]),
        ["uuid"],
        ["uuid", "facets", "fold_state", "current_version_uuid"],
    )
    by_uuid = {p["uuid"]: key for p, key in zip(params, sorted(spans), strict=True)}
    out = {}
    for row in returning_many(conn, stmt, params):
        current = str(row.current_version_uuid) if row.current_version_uuid else None
        out[by_uuid[str(row.uuid)]] = JobRow(
            str(row.uuid), row.facets or {}, row.fold_state or {}, current
        )
    return out


def touch_job(conn: Connection, namespace: str, raw_name: str, at: datetime) -> str:
    """The job's uuid, creating it (without parent) when new."""
    touch_namespace(conn, namespace, at)
    return touch_job_rows(conn, {(namespace, raw_name): (at, at)})[(namespace, raw_name)].uuid


def _state(conn: Connection, job_uuid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    t = s.jobs
    row = conn.execute(
        cached(
            ("job-state",),
            lambda: sa.select(t.c.facets, t.c.fold_state).where(t.c.uuid == sa.bindparam("u")),
        ),
        {"u": job_uuid},
    ).one()
    return dict(row.facets or {}), dict(row.fold_state or {})


def merge_job_facets(job: JobRow, ev: Event, parent_job: str | None) -> tuple[bool, bool]:
    """Fold one event's job facets and parent into ``job`` in memory (latest event time
    wins): (the row changed, something a refresh derives from changed)."""
    current, state = dict(job.facets), dict(job.fold_state)
    before = dict(current)
    stamp = ev.stamp()
    stamps = dict(state.get("facets") or {})
    changed = merge_stamped(current, stamps, {k: (stamp, v) for k, v in ev.job_facets.items()})
    parent = state.get("parent")
    derived = current != before
    if parent_job is not None and parent_job != job.uuid and (parent is None or parent[:2] < stamp):
        state["parent"] = [*stamp, parent_job]
        changed = True
        derived = derived or parent is None or parent[2] != parent_job
    if changed:
        state["facets"] = stamps
        job.facets, job.fold_state = current, state
    return changed, derived


def write_job_states(conn: Connection, rows: Sequence[JobRow]) -> None:
    """Store the merged facets and fold state of ``rows``."""
    update_rows(
        conn,
        s.jobs,
        "uuid",
        [{"uuid": r.uuid, "facets": r.facets, "fold_state": r.fold_state} for r in rows],
    )


def merge_job_event(conn: Connection, job_uuid: str, ev: Event, parent_job: str | None) -> bool:
    """Fold one event into the stored job; True when a refresh is needed."""
    current, state = _state(conn, job_uuid)
    job = JobRow(job_uuid, current, state)
    changed, derived = merge_job_facets(job, ev, parent_job)
    if changed:
        write_job_states(conn, [job])
    return derived


def add_static_version(conn: Connection, job_uuid: str, fingerprint: str, stamp: list[str]) -> None:
    """Remember a version declared by a JobEvent (it has no run to keep it alive)."""
    _, state = _state(conn, job_uuid)
    static = dict(state.get("static") or {})
    if fingerprint not in static or list(static[fingerprint]) < stamp:
        static[fingerprint] = stamp
        state["static"] = static
        t = s.jobs
        conn.execute(t.update().where(t.c.uuid == job_uuid).values(fold_state=state))


def _effective_parent(conn: Connection, job_uuid: str, wanted: str | None) -> str | None:
    """``wanted`` unless it would close a cycle of parents."""
    t = s.jobs
    node = wanted
    for _ in range(_MAX_DEPTH):
        if node is None:
            return wanted
        if node == job_uuid:
            return None
        node = conn.execute(sa.select(t.c.parent_job_uuid).where(t.c.uuid == node)).scalar()
    return None


def refresh_job(conn: Connection, job_uuid: str, _seen: frozenset[str] = frozenset()) -> None:
    """Recompute name, parent, alias and facet-derived columns; cascade to children."""
    t = s.jobs
    row = conn.execute(sa.select(t).where(t.c.uuid == job_uuid)).one()
    state = row.fold_state or {}
    raw: str = state.get("raw") or row.name
    wanted = state["parent"][2] if state.get("parent") else None
    parent = _effective_parent(conn, job_uuid, wanted)
    simple, fqn = raw, raw
    if parent is not None:
        prow = conn.execute(sa.select(t.c.name, t.c.fold_state).where(t.c.uuid == parent)).one()
        praw = (prow.fold_state or {}).get("raw") or prow.name
        for prefix in (prow.name, praw):
            if raw.startswith(prefix + "."):
                simple = raw[len(prefix) + 1 :]
                break
        fqn = f"{prow.name}.{simple}"
    parent_key = parent or ""
    holder = _holder(conn, row.namespace, simple, parent_key, job_uuid)
    if holder is not None:
        if _outranks(raw, fqn, holder.raw):
            # Free the name first; the holder's refresh below renames it for good.
            conn.execute(t.update().where(t.c.uuid == holder.uuid).values(parent_key=holder.uuid))
        else:
            simple, fqn, parent_key = raw, raw, job_uuid
    merged: dict[str, Any] = row.facets or {}
    conn.execute(
        t.update()
        .where(t.c.uuid == job_uuid)
        .values(
            simple_name=simple,
            name=fqn,
            parent_job_uuid=parent,
            parent_key=parent_key,
            type=fx.job_type(merged),
            description=fx.description(merged),
            location=fx.location(merged),
        )
    )
    stored_jobs.set_alias(conn, job_uuid, row.namespace, raw if raw != fqn else None)
    if holder is not None and parent_key != job_uuid:
        refresh_job(conn, holder.uuid, _seen | {job_uuid})
    if (row.simple_name, row.parent_key) != (simple, parent_key) and row.parent_job_uuid:
        # A name this job gave up may be what a job that yielded to it wanted.
        for other in _yielded(conn, row.namespace, str(row.parent_job_uuid), job_uuid):
            if other not in _seen:
                refresh_job(conn, other, _seen | {job_uuid})
    if fqn != row.name and job_uuid not in _seen:
        children = conn.execute(sa.select(t.c.uuid).where(t.c.parent_job_uuid == job_uuid))
        kids: list[Any] = list(children.scalars().all())
        for child in kids:
            refresh_job(conn, str(child), _seen | {job_uuid})


@dataclass(frozen=True)
class _Holder:
    uuid: str
    raw: str


def _holder(
    conn: Connection, namespace: str, simple: str, parent_key: str, job_uuid: str
) -> _Holder | None:
    """The other job that has ``simple`` under ``parent_key``, if any."""
    t = s.jobs
    row = conn.execute(
        sa.select(t.c.uuid, t.c.name, t.c.fold_state).where(
            t.c.namespace == namespace,
            t.c.simple_name == simple,
            t.c.parent_key == parent_key,
            t.c.uuid != job_uuid,
        )
    ).first()
    if row is None:
        return None
    return _Holder(str(row.uuid), (row.fold_state or {}).get("raw") or row.name)


def _outranks(raw: str, fqn: str, other_raw: str) -> bool:
    """Which of two jobs named alike under one parent keeps the name (Marquez would merge
    them; they stay two jobs here, since their runs came under different names).

    The job whose events already use the full name wins, then the shorter, then the
    smaller raw name: a rule on the names alone, so arrival order cannot change it.
    """
    return (raw != fqn, len(raw), raw) < (other_raw != fqn, len(other_raw), other_raw)


def _yielded(conn: Connection, namespace: str, parent: str, job_uuid: str) -> list[str]:
    """Jobs under ``parent`` that kept their raw names because another job outranked them."""
    t = s.jobs
    found: sa.CursorResult[Any] = conn.execute(
        sa.select(t.c.uuid).where(
            t.c.namespace == namespace,
            t.c.parent_job_uuid == parent,
            t.c.parent_key == sa.cast(t.c.uuid, t.c.parent_key.type),
            t.c.uuid != job_uuid,
        )
    )
    return sorted(str(u) for u in found.scalars().all())


@dataclass(frozen=True)
class VersionWanted:
    """The job version one run or JobEvent needs."""

    job_uuid: str
    inputs: dict[tuple[str, str], str]
    outputs: dict[tuple[str, str], str]
    job_facets: dict[str, Any]
    at: datetime


def ensure_job_versions(conn: Connection, wanted: Sequence[VersionWanted]) -> list[tuple[str, str]]:
    """The ``(uuid, fingerprint)`` of the version for each io and source, created when new."""
    out: list[tuple[str, str]] = []
    rows: dict[str, dict[str, Any]] = {}
    edges: dict[str, list[dict[str, Any]]] = {}
    for w in wanted:
        fp = fx.job_fingerprint(list(w.inputs), list(w.outputs), w.job_facets)
        uuid = ids.job_version_uuid(w.job_uuid, fp)
        out.append((uuid, fp))
        if uuid in rows:
            if w.at < rows[uuid]["created_at"]:
                rows[uuid]["created_at"] = rows[uuid]["updated_at"] = w.at
            continue
        rows[uuid] = {
            "uuid": uuid,
            "job_uuid": w.job_uuid,
            "version": fp,
            "source_code": fx.source_code(w.job_facets),
            "location": fx.location(w.job_facets),
            "program_facets": fx.program_facets(w.job_facets),
            "inputs": [{"namespace": ns, "name": n} for ns, n in sorted(w.inputs)],
            "outputs": [{"namespace": ns, "name": n} for ns, n in sorted(w.outputs)],
            "created_at": w.at,
            "updated_at": w.at,
        }
        io = {(d, "INPUT") for d in w.inputs.values()} | {(d, "OUTPUT") for d in w.outputs.values()}
        edges[uuid] = [
            {"job_version_uuid": uuid, "dataset_uuid": d, "io_type": kind, "job_uuid": w.job_uuid}
            for d, kind in sorted(io)
        ]
    versions_of.insert_new(conn, [rows[u] for u in sorted(rows)], edges)
    return out


def ensure_job_version(
    conn: Connection,
    job_uuid: str,
    inputs: dict[tuple[str, str], str],
    outputs: dict[tuple[str, str], str],
    job_facets: dict[str, Any],
    at: datetime,
) -> tuple[str, str]:
    """The ``(uuid, fingerprint)`` of the version for this io and source."""
    [found] = ensure_job_versions(conn, [VersionWanted(job_uuid, inputs, outputs, job_facets, at)])
    return found


def _from_stamp(stamp: list[str]) -> datetime:
    return datetime.strptime(stamp[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def widen_job_versions(
    conn: Connection, runs: Sequence[tuple[str, str, datetime, datetime]]
) -> None:
    """Stretch versions' times and latest run to cover runs ``(version, run, created,
    updated)`` as stored.

    Enough when the run joined the version or only gained events (a run's times
    only widen); a version a run left needs :func:`refresh_job_versions`.
    """
    versions_of.widen(conn, runs)


def refresh_job_versions(conn: Connection, version_uuids: set[str]) -> None:
    """Recompute times and latest run of these versions, drop orphans, move current:
    a version with no run left (nor a JobEvent's) goes, one with runs left takes their
    times and its newest as latest run. Set by set (one fold-state read per job), as
    lineage retention refreshes hundreds at a time."""
    r = stored_runs.relation()
    rows = versions_of.identities(conn, version_uuids)  # version -> (job, fingerprint)
    spans: dict[str, list[Any]] = {}  # version -> its runs' first and last times
    for part in chunks(sorted(version_uuids)):
        runs_left = (
            sa.select(
                r.c.job_version_uuid,
                r.c.job_uuid,
                sa.func.min(r.c.created_at),
                sa.func.max(r.c.updated_at),
            )
            .where(r.c.job_version_uuid.in_(part))
            .group_by(r.c.job_version_uuid, r.c.job_uuid)
        )
        for v, job, lo, hi in conn.execute(runs_left):
            if rows.get(str(v), ("",))[0] == str(job):  # the version's own job's runs
                spans[str(v)] = [lo, hi]
    jobs = {job for job, _ in rows.values()}
    states = {job: _state(conn, job)[1] for job in sorted(jobs)}
    gone: list[str] = []
    writes: list[dict[str, Any]] = []
    for v, (job, fp) in sorted(rows.items()):
        times = list(spans.get(v, ()))
        static = (states.get(job, {}).get("static") or {}).get(fp)
        if static:
            times.append(_from_stamp(static))
        if not times:
            gone.append(v)
            continue
        latest = conn.execute(
            sa.select(r.c.uuid)
            .where(r.c.job_uuid == job, r.c.job_version_uuid == v)
            .order_by(r.c.updated_at.desc(), r.c.uuid.desc())
            .limit(1)
        ).scalar()
        writes.append(
            {
                "uuid": v,
                "created_at": min(times),
                "updated_at": max(times),
                "latest_run_uuid": latest,
            }
        )
    versions_of.delete(conn, gone)
    versions_of.update_times(conn, writes)
    refresh_current_versions(conn, {job: (states[job], False) for job in jobs})


def refresh_current_versions(
    conn: Connection, jobs: dict[str, tuple[dict[str, Any] | None, str | bool | None]]
) -> None:
    """Each job's current version: that of its latest run, or a later JobEvent's.

    ``jobs`` maps a job to its fold state when the caller has it (None: read it) and
    its stored current version (False: unknown), to skip writes that change nothing.
    """
    if not jobs:
        return
    ordered = sorted(jobs)
    latest = stored_runs.latest_versioned(conn, ordered)
    writes = []
    for job_uuid in ordered:
        state, known = jobs[job_uuid]
        best = latest.get(job_uuid)
        if state is None:
            _, state = _state(conn, job_uuid)
        static = state.get("static") or {}
        if static:
            fp, stamp = max(static.items(), key=lambda kv: (list(kv[1]), kv[0]))
            at = _from_stamp(stamp)
            if best is None or at > best[0]:
                best = (at, ids.job_version_uuid(job_uuid, fp))
        current = best[1] if best else None
        if known is False or known != current:
            writes.append({"uuid": job_uuid, "current_version_uuid": current})
    update_rows(conn, s.jobs, "uuid", writes)
