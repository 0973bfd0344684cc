"""Fold one run's events into its state: a pure function of the event set.

Events are visited in :meth:`Event.fold_key` order, so the result does not
depend on arrival order. Later facets overwrite earlier ones key by key; the
first terminal event fixes the state for good.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.lineage.record.events import ACTIVE, TERMINAL, DatasetRef, Event, ParentRef


@dataclass
class IoFold:
    """One input or output dataset of a run, merged over the run's events."""

    namespace: str
    name: str
    first_seen: datetime
    facets: dict[str, Any] = field(default_factory=dict)
    io_facets: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)

    def add(self, ref: DatasetRef) -> None:
        self.facets.update(ref.facets)
        self.io_facets.update(ref.io_facets)


@dataclass
class RunFold:
    run_id: str
    events: list[Event]
    job_namespace: str
    job_name: str
    created_at: datetime
    updated_at: datetime
    state: str = "NEW"
    transitions: list[tuple[str, datetime, str]] = field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    transitioned_at: datetime | None = None
    parent: ParentRef | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    job_facets: dict[str, Any] = field(default_factory=dict)
    inputs: dict[tuple[str, str], IoFold] = field(default_factory=dict)
    outputs: dict[tuple[str, str], IoFold] = field(default_factory=dict)

    @property
    def bind_time(self) -> datetime:
        """When the run read its inputs: its earliest event."""
        return self.created_at


def _merge_io(
    target: dict[tuple[str, str], IoFold], refs: tuple[DatasetRef, ...], at: datetime
) -> None:
    for ref in refs:
        io = target.get(ref.key)
        if io is None:
            io = target[ref.key] = IoFold(ref.namespace, ref.name, at)
        io.add(ref)


def fold_run(events: list[Event]) -> RunFold:
    """The run described by ``events`` (all of one run id, at least one)."""
    ordered = sorted(events, key=Event.fold_key)
    first, last = ordered[0], ordered[-1]
    assert first.run_id is not None and last.job_namespace and last.job_name
    run = RunFold(
        run_id=first.run_id,
        events=ordered,
        job_namespace=last.job_namespace,
        job_name=last.job_name,
        created_at=first.event_time,
        updated_at=last.event_time,
    )
    for ev in ordered:
        run.facets.update(ev.run_facets)
        run.job_facets.update(ev.job_facets)
        if ev.parent is not None:
            run.parent = ev.parent
        _merge_io(run.inputs, ev.inputs, ev.event_time)
        _merge_io(run.outputs, ev.outputs, ev.event_time)
        if ev.event_type == "START" and run.started_at is None:
            run.started_at = ev.event_time
        if run.state in TERMINAL.values():
            continue  # terminal is final; later events only add facets
        new = run.state
        if ev.event_type in TERMINAL:
            new = TERMINAL[ev.event_type]
            run.ended_at = ev.event_time
        elif ev.event_type in ACTIVE:
            new = "RUNNING"
        if new != run.state:
            run.state = new
            run.transitions.append((new, ev.event_time, ev.payload_hash))
            run.transitioned_at = ev.event_time
    return run
