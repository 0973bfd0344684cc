"""Keep what one run determines equal to the fold of all of its stored events."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata import ids
from strata.lineage.record import bindings, jobs, parsed, versions
from strata.lineage.record import facets as fx
from strata.lineage.record.events import Event
from strata.lineage.record.fold import RunFold, fold_run
from strata.lineage.record.rows import (
    merge_dataset_facets,
    refresh_datasets,
    touch_dataset_rows,
    write_dataset_facets,
)
from strata.store.bulk import (
    cached,
    chunks,
    one_of,
)
from strata.store.owners import events as stored_events
from strata.store.owners import namespaces, sources
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import symlinks as stored_symlinks
from strata.store.owners.datasets.rows import DatasetRow
from strata.store.owners.jobs.rows import JobRow
from strata.store.owners.runs import rows as stored_runs
from strata.store.owners.runs import said as run_said

_DATASETS = dataset_rows.relation()

K = TypeVar("K")
Key = tuple[str, str]  # a dataset by (namespace, name)


# A parent run known only from its children is made, as Marquez makes it, from a child's
# event: its type as the run's state (START, RUNNING and OTHER: RUNNING), its time as the
# start (the end, for a terminal type). Of several children's events the earliest wins
# (Marquez keeps the first it receives), so the row does not depend on arrival order.
_PLACEHOLDER_STATES = {"COMPLETE": "COMPLETED", "FAIL": "FAILED", "ABORT": "ABORTED"}


def _placeholder_state(event_type: str | None, at: datetime) -> stored_runs.Placeholder:
    if event_type is None:  # a child event without a type says nothing of the parent
        return stored_runs.Placeholder("NEW", None, None, None)
    state = _PLACEHOLDER_STATES.get(event_type, "RUNNING")
    done = state != "RUNNING"
    return stored_runs.Placeholder(state, None if done else at, at if done else None, at)


def touch_placeholder_run(
    conn: Connection, run_uuid: str, job_uuid: str, at: datetime, event_type: str | None
) -> None:
    """A parent run known only from a child's parent facet (see above)."""
    said = _placeholder_state(event_type, at)
    if stored_runs.add_placeholder(conn, run_uuid, job_uuid, at, said):
        return
    if stored_events.run_has_own(conn, run_uuid):
        return
    stored_runs.widen_placeholder(conn, run_uuid, job_uuid, at, said)


def touch_events(
    conn: Connection, events: Sequence[Event]
) -> tuple[dict[tuple[str, str], DatasetRow], set[str], list[DatasetRow]]:
    """Namespaces, datasets and sources of ``events``, and their dataset facets merged
    in memory.

    Returns the events' dataset rows, the datasets whose facet values changed (their
    derived columns need a refresh) and the rows whose merged facets the caller writes
    with :func:`write_dataset_facets`. Every write here is a latest-wins or widening
    merge, so applying an event once is all the model ever needs of it, and the events
    of a group are merged in memory and written once.
    """
    names: dict[str, tuple[datetime, datetime]] = {}
    spans: dict[tuple[str, str], tuple[datetime, datetime]] = {}
    named_sources: set[tuple[str, str | None, datetime]] = set()
    symlinks: dict[tuple[tuple[str, str], str, str], set[str | None]] = {}
    for ev in events:
        at = ev.event_time
        refs = (*ev.inputs, *ev.outputs, *((ev.dataset,) if ev.dataset else ()))
        for ns in (ev.job_namespace, ev.parent.namespace if ev.parent else None):
            if ns is not None:
                widen(names, ns, at)
        for ref in refs:
            widen(names, ref.namespace, at)
            widen(spans, ref.key, at)
            for symlink_ns, symlink, kind in fx.symlinks(ref.facets):
                widen(names, symlink_ns, at)  # a symlink's namespace exists, as in Marquez
                kinds = symlinks.setdefault((ref.key, symlink_ns, symlink), set())
                kinds.add(kind)
            source = fx.data_source(ref.facets)
            if source is not None:
                named_sources.add((source[0], source[1], at))
    namespaces.touch(conn, names)
    found = touch_dataset_rows(conn, spans)
    stored_symlinks.add_symlinks(
        conn,
        {
            (found[key].uuid, ns, name): max((k for k in kinds if k is not None), default=None)
            for (key, ns, name), kinds in symlinks.items()
        },
    )
    # Per dataset and facet, the group's latest (by stamp) value, merged once: a dataset
    # named by hundreds of the group's events was merged, copied and compared as often.
    latest: dict[tuple[str, str], dict[str, tuple[list[str], Any]]] = {}
    for ev in events:
        stamp: list[str] | None = None
        for ref in (*ev.inputs, *ev.outputs, *((ev.dataset,) if ev.dataset else ())):
            if not ref.facets:
                continue
            stamp = stamp or ev.stamp()
            facets = latest.setdefault(ref.key, {})
            for name, value in ref.facets.items():
                best = facets.get(name)
                if best is None or best[0] < stamp:
                    facets[name] = (stamp, value)
    changed: dict[str, DatasetRow] = {}
    stale: set[str] = set()
    for key in sorted(latest):
        row = found[key]
        wrote, values = merge_dataset_facets(row, latest[key])
        if wrote:
            changed[row.uuid] = row
        if values:
            stale.add(row.uuid)
    for name, uri, at in sorted(named_sources, key=lambda x: (x[0], x[1] or "", x[2])):
        sources.touch(conn, name, uri, at)
    return found, stale, [changed[u] for u in sorted(changed)]


def widen(spans: dict[K, tuple[datetime, datetime]], key: K, at: datetime) -> None:
    """Stretch ``spans[key]`` (earliest, latest) to cover ``at``."""
    span = spans.get(key)
    if span is None:
        spans[key] = (at, at)
    elif at < span[0] or at > span[1]:
        spans[key] = (min(span[0], at), max(span[1], at))


def touch_event_datasets(conn: Connection, ev: Event) -> dict[tuple[str, str], DatasetRow]:
    """Create the event's datasets, fold its dataset facets in and refresh what changed."""
    found, stale, changed = touch_events(conn, [ev])
    write_dataset_facets(conn, changed, stale)
    refresh_datasets(conn, {row.uuid: row.facets for row in found.values() if row.uuid in stale})
    return found


def apply_dataset_events(conn: Connection, events: Sequence[Event]) -> None:
    """Fold DatasetEvents in: their datasets and facets, and the versions they declare
    of non-lake datasets (:func:`versions.declare`), with the runs that read those
    datasets bound again where a declared version moved what they see."""
    moved: list[versions.Moved] = []
    uuids: dict[Key, str] = {}
    lake: set[str] = set()
    for ev in sorted(events, key=Event.fold_key):
        assert ev.dataset is not None
        row = touch_event_datasets(conn, ev)[ev.dataset.key]
        if row.is_lake:
            continue  # a lake dataset's versions are its commits
        declared = versions.declare(conn, row.uuid, ev)
        if declared is not None:
            moved.append(declared)
    if not moved:
        return
    consumers = versions.consumers_of(conn, moved)
    settled = _bind_inputs(conn, [], {}, consumers, uuids, lake)
    versions.settle(conn, settled - lake)
    versions.set_current(conn, {m.dataset for m in moved} - settled)


def _lookup_datasets(
    conn: Connection, wanted: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], tuple[str, bool]]:
    d = _DATASETS
    out = {}
    for chunk in chunks(sorted(set(wanted))):
        found = conn.execute(
            cached(
                ("dataset-by-uuid", conn.dialect.name),
                lambda: sa.select(d.c.namespace, d.c.name, d.c.uuid, d.c.is_lake).where(
                    one_of(conn.dialect.name, d.c.uuid, "u")
                ),
            ),
            {"u": [ids.dataset_uuid(ns, n) for ns, n in chunk]},
        ).all()
        out.update({(r.namespace, r.name): (str(r.uuid), bool(r.is_lake)) for r in found})
        missing = [k for k in chunk if k not in out]
        # Only in stores from before ids.dataset_uuid was shared: the lake named its
        # datasets under another root then, and those rows keep their ids.
        for ns, name in missing:
            row = conn.execute(
                cached(
                    ("dataset-by-name",),
                    lambda: sa.select(d.c.uuid, d.c.is_lake).where(
                        d.c.namespace == sa.bindparam("ns"), d.c.name == sa.bindparam("n")
                    ),
                ),
                {"ns": ns, "n": name},
            ).one()
            out[(ns, name)] = (str(row.uuid), bool(row.is_lake))
    return out


def _read_facets(run: RunFold) -> dict[tuple[str, str], tuple[str | None, dict[str, Any]]]:
    """What binds each input (its version label) and what the run said of it (its
    inputFacets, kept under the bound version): a change to either rebinds the run."""
    return {
        k: (fx.dataset_version_label({**io.facets, **io.io_facets}), io.io_facets)
        for k, io in run.inputs.items()
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
    if old.inputs.keys() != run.inputs.keys():
        return False  # its column lineage keeps only fields of the run's inputs
    a, b = old.outputs[key], run.outputs[key]
    return (a.first_seen, a.facets, a.io_facets) == (b.first_seen, b.facets, b.io_facets)


@dataclass
class _Step:
    """One run of a group: its fold with and without the group's new events."""

    run: RunFold
    old: RunFold | None
    job_uuid: str = ""
    version: str = ""


def apply_run_events(conn: Connection, new: Sequence[Event]) -> None:
    """Bring the model up to date after storing ``new``, distinct new run events.

    A run's own rows are a function of its fold, so they are rewritten only where
    the fold with the new events differs from the fold without them; shared rows
    (namespaces, datasets, jobs) take the new events' merges only, since earlier
    events were merged when they arrived. Consumers are re-bound only when an
    output version they could see changed. Each step is one statement for the
    whole group, written after everything it reads: bindings after every output
    version of the group, current versions after every binding. The result equals
    a full recomputation from the stored events (tests/lineage/test_lineage_order.py).
    """
    if not new:
        return
    steps = _fold_runs(conn, new)
    found, job_rows = _touch_shared_rows(conn, sorted(new, key=Event.fold_key))
    uuids, lake = _dataset_uuids(conn, found, steps)
    _write_run_rows(conn, steps, uuids)
    _write_output_versions(conn, steps, uuids, lake)
    # Worked out while the database writes the outputs (see strata.store.deferred).
    job_versions = _job_version_changes(steps, job_rows)
    rebind, moved, consumers = _runs_to_rebind(conn, steps, uuids, lake)
    # It reads runs, written above, and nothing written below: read here, where every
    # write sent so far is done already (see strata.store.deferred).
    jobs.refresh_current_versions(conn, job_versions.current)
    settled = _bind_inputs(conn, steps, rebind, consumers, uuids, lake)
    versions.settle(conn, settled - lake)
    versions.set_current(conn, moved - settled)
    jobs.widen_job_versions(conn, job_versions.widened)
    jobs.refresh_job_versions(conn, job_versions.refresh)


def _fold_runs(conn: Connection, new: Sequence[Event]) -> list[_Step]:
    """Each run of ``new``, by uuid: its fold with and without the new events."""
    fresh: dict[str, list[Event]] = {}
    for ev in new:
        assert ev.run_id is not None and ev.job_namespace is not None and ev.job_name
        fresh.setdefault(ev.run_id, []).append(ev)
    stored = parsed.load_events(conn, list(fresh), [ev.payload_hash for ev in new])
    parsed.PARSED.add(new)
    steps: list[_Step] = []
    for run_uuid in sorted(fresh):
        earlier = stored.get(run_uuid, [])
        run = fold_run(earlier + fresh[run_uuid])
        steps.append(_Step(run, fold_run(earlier) if earlier else None))
    return steps


@dataclass(frozen=True, order=True)
class _ChildSaid:
    """What one child's event tells of its parent run."""

    at: datetime
    event_type: str  # "" for none
    job_uuid: str


def _deciding(told: Sequence[_ChildSaid]) -> list[_ChildSaid]:
    """Of a parent run's children's events in one group, those its placeholder row
    depends on: the earliest (its state and times win), the latest (the times widen to
    it) and the one naming the smallest job (the run belongs to it). Folding the others
    too would change nothing (a build's thousand partition runs name one parent)."""
    first = min(c.at for c in told)
    keep = {c for c in told if c.at == first}
    keep.add(max(told, key=lambda c: c.at))
    keep.add(min(told, key=lambda c: c.job_uuid))
    return sorted(keep)


def _touch_shared_rows(
    conn: Connection, ordered: Sequence[Event]
) -> tuple[dict[tuple[str, str], DatasetRow], dict[tuple[str, str], JobRow]]:
    """Namespaces, sources, datasets, jobs and parent runs take the events' merges, once.

    Returns the events' dataset rows and job rows, by (namespace, name).
    """
    found, stale, facet_rows = touch_events(conn, ordered)
    spans: dict[tuple[str, str], tuple[datetime, datetime]] = {}
    for ev in ordered:
        assert ev.job_namespace is not None and ev.job_name is not None
        widen(spans, (ev.job_namespace, ev.job_name), ev.event_time)
        if ev.parent is not None:
            widen(spans, (ev.parent.namespace, ev.parent.name), ev.event_time)
    job_rows = jobs.touch_job_rows(conn, spans)
    # Written after the jobs are read: on PostgreSQL the database writes the datasets
    # while the jobs' facets are merged (see strata.store.deferred).
    write_dataset_facets(conn, facet_rows, stale)
    merged: dict[str, JobRow] = {}
    refresh: set[str] = set()
    children: dict[str, list[_ChildSaid]] = {}
    for ev in ordered:
        assert ev.run_id is not None and ev.job_namespace is not None and ev.job_name
        parent_job = None
        if ev.parent is not None:
            parent_job = job_rows[(ev.parent.namespace, ev.parent.name)].uuid
            if ev.parent.run_id != ev.run_id:
                said = _ChildSaid(ev.event_time, ev.event_type or "", parent_job)
                children.setdefault(ev.parent.run_id, []).append(said)
        job = job_rows[(ev.job_namespace, ev.job_name)]
        changed, derived = jobs.merge_job_facets(job, ev, parent_job)
        if changed:
            merged[job.uuid] = job
        if derived:
            refresh.add(job.uuid)
    for parent_run, told in children.items():
        for c in _deciding(told):
            touch_placeholder_run(conn, parent_run, c.job_uuid, c.at, c.event_type or None)
    jobs.write_job_states(conn, [merged[u] for u in sorted(merged)])
    refresh_datasets(conn, {row.uuid: row.facets for row in found.values() if row.uuid in stale})
    for job_uuid in sorted(refresh):
        jobs.refresh_job(conn, job_uuid)
    return found, job_rows


def _dataset_uuids(
    conn: Connection, found: dict[tuple[str, str], DatasetRow], steps: Sequence[_Step]
) -> tuple[dict[tuple[str, str], str], set[str]]:
    """The uuid of every dataset the runs name, by (namespace, name), and the lake ones."""
    datasets = {k: (row.uuid, row.is_lake) for k, row in found.items()}
    missing = {k for st in steps for k in (*st.run.inputs, *st.run.outputs)} - set(datasets)
    datasets.update(_lookup_datasets(conn, sorted(missing)))
    uuids = {k: v[0] for k, v in datasets.items()}
    lake = {v[0] for v in datasets.values() if v[1]}
    return uuids, lake


def _write_run_rows(conn: Connection, steps: Sequence[_Step], uuids: dict[Key, str]) -> None:
    """Each run's job version exists and the run's row and state history equal its fold."""
    wanted = []
    for st in steps:
        run = st.run
        st.job_uuid = ids.job_uuid(run.job_namespace, run.job_name)
        wanted.append(
            jobs.VersionWanted(
                st.job_uuid,
                {k: uuids[k] for k in run.inputs},
                {k: uuids[k] for k in run.outputs},
                run.job_facets,
                run.created_at,
            )
        )
    for st, (version, _) in zip(steps, jobs.ensure_job_versions(conn, wanted), strict=True):
        st.version = version
    write_runs(conn, steps)


def _write_output_versions(
    conn: Connection, steps: Sequence[_Step], uuids: dict[Key, str], lake: set[str]
) -> None:
    """Each output version the group changed equals its run's fold."""
    versions.write_outputs(
        conn,
        [
            versions.Output(st.run, io, uuids[key], uuids[key] in lake, st.old is None)
            for st in steps
            for key, io in sorted(st.run.outputs.items())
            if not _same_output(st.old, st.run, key)
        ],
    )


@dataclass
class _JobVersionChanges:
    """What the group does to job versions: widened in place, or recounted whole."""

    refresh: set[str] = field(default_factory=set)  # job versions a run left or joined
    widened: list[tuple[str, str, datetime, datetime]] = field(default_factory=list)
    # Jobs whose current version is re-read: (fold state, current version) as touched.
    current: dict[str, tuple[dict[str, Any] | None, str | bool | None]] = field(
        default_factory=dict
    )


def _job_version_changes(
    steps: Sequence[_Step], job_rows: dict[tuple[str, str], JobRow]
) -> _JobVersionChanges:
    """Which job versions a run moved between, which it only widens, and which jobs'
    current versions need reading again; reads nothing from the store."""
    out = _JobVersionChanges()
    recounted: set[str] = set()  # jobs whose current version refresh_job_versions moves
    for st in steps:
        run, old = st.run, st.old
        # The stored version is a function of the earlier fold, so it need not be read back.
        previous = (
            ids.job_version_uuid(
                ids.job_uuid(old.job_namespace, old.job_name),
                fx.job_fingerprint(list(old.inputs), list(old.outputs), old.job_facets),
            )
            if old is not None
            else None
        )
        if old is not None and previous is not None and previous != st.version:
            out.refresh |= {previous, st.version}
            recounted |= {ids.job_uuid(old.job_namespace, old.job_name), st.job_uuid}
        else:
            out.widened.append((st.version, run.run_id, run.created_at, run.updated_at))
    by_uuid = {job.uuid: job for job in job_rows.values()}
    for job_uuid in {st.job_uuid for st in steps}:
        touched = by_uuid.get(job_uuid)
        if job_uuid in recounted:
            continue  # refresh_job_versions sets it
        if touched is not None:
            out.current[job_uuid] = (touched.fold_state, touched.current_version)
        else:
            out.current[job_uuid] = (None, False)
    return out


def _runs_to_rebind(
    conn: Connection, steps: Sequence[_Step], uuids: dict[Key, str], lake: set[str]
) -> tuple[dict[str, bindings.Rebind], set[str], set[str]]:
    """The group's runs whose inputs may bind otherwise, the datasets whose outputs moved,
    and the runs outside those that read a moved output."""
    rebind: dict[str, bindings.Rebind] = {}
    moved_outputs: list[versions.Moved] = []
    moved: set[str] = set()
    for st in steps:
        run, old = st.run, st.old
        retimed = old is None or old.bind_time != run.bind_time
        if old is None or retimed or _read_facets(old) != _read_facets(run):
            rebind[run.run_id] = bindings.Rebind(
                run, fresh=old is None, retimed=retimed, said=bindings.sent_input_facets(old)
            )
        for key in sorted(run.outputs):
            dataset = uuids[key]
            before, after = _output_signature(old, key), _output_signature(run, key)
            if dataset in lake or before == after:
                continue
            moved.add(dataset)
            sigs = [sig for sig in (before, after) if sig is not None]
            labels = {sig[1] for sig in sigs if sig[1] is not None}
            labels.add(ids.output_version_uuid(run.run_id, dataset))
            since = min((sig[0] for sig in sigs if sig[2]), default=None)
            moved_outputs.append(versions.Moved(dataset, run.run_id, since, frozenset(labels)))
    consumers = versions.consumers_of(conn, moved_outputs) - set(rebind)
    return rebind, moved, consumers


def _bind_inputs(
    conn: Connection,
    steps: Sequence[_Step],
    rebind: dict[str, bindings.Rebind],
    consumers: set[str],
    uuids: dict[Key, str],
    lake: set[str],
) -> set[str]:
    """Every run to rebind reads the versions its inputs name or see; returns the datasets
    whose synthetic versions changed. Adds the datasets it looked up to ``uuids``, ``lake``."""
    in_group = {st.run.run_id: st.run for st in steps}
    others = parsed.load_events(conn, sorted(consumers - set(in_group)))
    for run_uuid in sorted(consumers):
        run_of = in_group.get(run_uuid)
        if run_of is None and run_uuid in others:
            run_of = fold_run(others[run_uuid])
        if run_of is not None:
            said = bindings.sent_input_facets(run_of)
            rebind[run_uuid] = bindings.Rebind(run_of, retimed=False, said=said)
    extra = {k for r in rebind.values() for k in r.run.inputs} - set(uuids)
    for k, (u, is_lake) in _lookup_datasets(conn, sorted(extra)).items():
        uuids[k] = u
        if is_lake:
            lake.add(u)
    return bindings.bind_runs(conn, [rebind[r] for r in sorted(rebind)], uuids, lake)


def _io_facets(run: RunFold) -> dict[str, Any] | None:
    """The run's inputFacets and outputFacets by dataset, for its dataset versions' facets
    in the API; None when it sent none."""
    out = {
        side: [
            [io.namespace, io.name, io.io_facets] for _, io in sorted(ios.items()) if io.io_facets
        ]
        for side, ios in (("inputs", run.inputs), ("outputs", run.outputs))
    }
    return out if out["inputs"] or out["outputs"] else None


def write_runs(conn: Connection, steps: Sequence[_Step]) -> None:
    """Upsert the runs' rows and rewrite their state histories where they changed."""
    rows = []
    cleared = []
    transitions = []
    for st in steps:
        run, old = st.run, st.old
        nominal_start, nominal_end = fx.nominal_times(run.facets)
        rows.append(
            stored_runs.RunRow(
                uuid=run.run_id,
                job_uuid=st.job_uuid,
                job_version_uuid=st.version,
                parent_run_uuid=run.parent.run_id if run.parent else None,
                state=run.state,
                nominal_start_time=nominal_start,
                nominal_end_time=nominal_end,
                started_at=run.started_at,
                ended_at=run.ended_at,
                transitioned_at=run.transitioned_at,
                created_at=run.created_at,
                updated_at=run.updated_at,
                facets=run.facets,
                error=fx.get(run.facets, "errorMessage") or None,
                io_facets=_io_facets(run),
                partition_key=fx.partition_key(run.facets),
            )
        )
        if old is not None and old.transitions == run.transitions:
            continue
        if old is not None:
            cleared.append(run.run_id)
        transitions += [
            run_said.Transition(
                ids.run_state_uuid(run.run_id, digest),
                run.run_id,
                state,
                at,
                ids.event_uuid(digest),
            )
            for state, at, digest in run.transitions
        ]
    stored_runs.upsert(conn, rows)
    run_said.replace_states(conn, cleared, transitions)
