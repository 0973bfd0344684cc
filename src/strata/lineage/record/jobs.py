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
from strata.store.bulk import (
    chunks,
)
from strata.store.owners.jobs import aliases as job_aliases
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.jobs.rows import JobRow
from strata.store.owners.runs import rows as stored_runs

_MAX_DEPTH = 64


def touch_job_rows(
    conn: Connection, spans: dict[tuple[str, str], tuple[datetime, datetime]]
) -> dict[tuple[str, str], JobRow]:
    """Create (without parent) or widen jobs, not their namespaces, each to cover its
    ``(earliest, latest)`` times, and read them back in one statement."""
    if not spans:
        return {}
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
    touched = job_rows.touch(conn, params)
    return {key: touched[str(p["uuid"])] for p, key in zip(params, sorted(spans), strict=True)}


def touch_job(conn: Connection, namespace: str, raw_name: str, at: datetime) -> str:
    """The job's uuid, creating it (without parent) when new."""
    touch_namespace(conn, namespace, at)
    return touch_job_rows(conn, {(namespace, raw_name): (at, at)})[(namespace, raw_name)].uuid


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
    job_rows.write_states(conn, rows)


def merge_job_event(conn: Connection, job_uuid: str, ev: Event, parent_job: str | None) -> bool:
    """Fold one event into the stored job; True when a refresh is needed."""
    current, state = job_rows.state(conn, job_uuid)
    job = JobRow(job_uuid, current, state)
    changed, derived = merge_job_facets(job, ev, parent_job)
    if changed:
        write_job_states(conn, [job])
    return derived


def add_static_version(conn: Connection, job_uuid: str, fingerprint: str, stamp: list[str]) -> None:
    """Remember a version declared by a JobEvent (it has no run to keep it alive)."""
    _, state = job_rows.state(conn, job_uuid)
    static = dict(state.get("static") or {})
    if fingerprint not in static or list(static[fingerprint]) < stamp:
        static[fingerprint] = stamp
        state["static"] = static
        job_rows.write_fold_state(conn, job_uuid, state)


def _effective_parent(conn: Connection, job_uuid: str, wanted: str | None) -> str | None:
    """``wanted`` unless it would close a cycle of parents."""
    node = wanted
    for _ in range(_MAX_DEPTH):
        if node is None:
            return wanted
        if node == job_uuid:
            return None
        node = job_rows.parent_of(conn, node)
    return None


def refresh_job(conn: Connection, job_uuid: str, _seen: frozenset[str] = frozenset()) -> None:
    """Recompute name, parent, alias and facet-derived columns; cascade to children."""
    row = job_rows.row(conn, job_uuid)
    state = row.fold_state or {}
    raw: str = state.get("raw") or row.name
    wanted = state["parent"][2] if state.get("parent") else None
    parent = _effective_parent(conn, job_uuid, wanted)
    simple, fqn = raw, raw
    if parent is not None:
        pname, praw = job_rows.name_and_raw(conn, parent)
        for prefix in (pname, praw):
            if raw.startswith(prefix + "."):
                simple = raw[len(prefix) + 1 :]
                break
        fqn = f"{pname}.{simple}"
    parent_key = parent or ""
    holder = job_rows.holder(conn, row.namespace, simple, parent_key, job_uuid)
    if holder is not None:
        if _outranks(raw, fqn, holder.raw):
            # Free the name first; the holder's refresh below renames it for good.
            job_rows.free_name(conn, holder.uuid)
        else:
            simple, fqn, parent_key = raw, raw, job_uuid
    merged: dict[str, Any] = row.facets or {}
    naming = job_rows.Naming(
        simple_name=simple,
        name=fqn,
        parent_job_uuid=parent,
        parent_key=parent_key,
        type=fx.job_type(merged),
        description=fx.description(merged),
        location=fx.location(merged),
    )
    job_rows.write_names(conn, job_uuid, naming)
    job_aliases.set_alias(conn, job_uuid, row.namespace, raw if raw != fqn else None)
    if holder is not None and parent_key != job_uuid:
        refresh_job(conn, holder.uuid, _seen | {job_uuid})
    if (row.simple_name, row.parent_key) != (simple, parent_key) and row.parent_job_uuid:
        # A name this job gave up may be what a job that yielded to it wanted.
        for other in job_rows.yielded(conn, row.namespace, str(row.parent_job_uuid), job_uuid):
            if other not in _seen:
                refresh_job(conn, other, _seen | {job_uuid})
    if fqn != row.name and job_uuid not in _seen:
        for child in job_rows.children(conn, job_uuid):
            refresh_job(conn, child, _seen | {job_uuid})


def _outranks(raw: str, fqn: str, other_raw: str) -> bool:
    """Which of two jobs named alike under one parent keeps the name (Marquez would merge
    them; they stay two jobs here, since their runs came under different names).

    The job whose events already use the full name wins, then the shorter, then the
    smaller raw name: a rule on the names alone, so arrival order cannot change it.
    """
    return (raw != fqn, len(raw), raw) < (other_raw != fqn, len(other_raw), other_raw)


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
    states = {job: job_rows.state(conn, job)[1] for job in sorted(jobs)}
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
            _, state = job_rows.state(conn, job_uuid)
        static = state.get("static") or {}
        if static:
            fp, stamp = max(static.items(), key=lambda kv: (list(kv[1]), kv[0]))
            at = _from_stamp(stamp)
            if best is None or at > best[0]:
                best = (at, ids.job_version_uuid(job_uuid, fp))
        current = best[1] if best else None
        if known is False or known != current:
            writes.append({"uuid": job_uuid, "current_version_uuid": current})
    job_rows.set_current_versions(conn, writes)
