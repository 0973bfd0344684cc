"""Commit-triggered builds: the worker takes triggers (the commit outbox) and builds the
out-of-date dependents of each committed dataset.

Each lake commit writes a ``build_triggers`` row in the commit's own SQL transaction. A
worker claims the oldest pending trigger (with the other pending triggers of the same
dataset, which one build answers), builds what reads the dataset, and marks them done
only once the build is recorded. A claim is a lease: renewed while the worker works, and
taken again by another worker once it expires, so a worker killed mid-build loses no
trigger. The new versions' own triggers carry the build down the graph. On PostgreSQL
claims skip rows another worker has locked (``FOR UPDATE SKIP LOCKED``); on SQLite the
write lock serialises them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.builds.builder import BuildReport, Reporter
from strata.builds.leases import heartbeat
from strata.builds.service import BuildService
from strata.errors import StrataError
from strata.ids import new_id
from strata.store import schema as s
from strata.store.engine import write_tx


@dataclass(frozen=True)
class Claim:
    """Pending triggers of one dataset, claimed together."""

    ids: tuple[int, ...]
    dataset: str
    commit_id: int


@dataclass
class WorkerReport:
    triggers: int = 0
    builds: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"triggers": self.triggers, "builds": self.builds}


def _pending(bt: sa.Table, expired: datetime) -> Any:
    return sa.and_(
        bt.c.done_at.is_(None), sa.or_(bt.c.claimed_at.is_(None), bt.c.claimed_at < expired)
    )


def _locked(conn: Connection, query: sa.Select[Any]) -> sa.Select[Any]:
    if conn.dialect.name == "postgresql":
        return query.with_for_update(skip_locked=True, of=s.build_triggers)
    return query


def claim(engine: Engine, namespace: str, holder: str, lease: float) -> Claim | None:
    """Claim the oldest pending trigger and its dataset's other pending ones."""
    bt, d = s.build_triggers, s.datasets
    now = datetime.now(UTC)
    expired = now - timedelta(seconds=lease)
    with write_tx(engine) as conn:
        head = conn.execute(
            _locked(conn, sa.select(bt.c.id, bt.c.dataset_uuid).where(_pending(bt, expired)))
            .order_by(bt.c.id)
            .limit(1)
        ).first()
        if head is None:
            return None
        rows = conn.execute(
            _locked(
                conn,
                sa.select(bt.c.id, bt.c.commit_id, d.c.name, d.c.namespace)
                .join(d, d.c.uuid == bt.c.dataset_uuid)
                .where(bt.c.dataset_uuid == head.dataset_uuid, _pending(bt, expired)),
            ).order_by(bt.c.id)
        ).all()
        ids = tuple(int(r.id) for r in rows)
        conn.execute(bt.update().where(bt.c.id.in_(ids)).values(claimed_at=now, claimed_by=holder))
    first = rows[0]
    name = first.name if first.namespace == namespace else ""
    return Claim(ids, name, max(int(r.commit_id) for r in rows))


def _renew(engine: Engine, claimed: Claim, holder: str) -> None:
    bt = s.build_triggers
    with write_tx(engine) as conn:
        conn.execute(
            bt.update()
            .where(bt.c.id.in_(claimed.ids), bt.c.claimed_by == holder)
            .values(claimed_at=datetime.now(UTC))
        )


def finish(engine: Engine, claimed: Claim, holder: str, error: str | None) -> None:
    bt = s.build_triggers
    with write_tx(engine) as conn:
        conn.execute(
            bt.update()
            .where(bt.c.id.in_(claimed.ids), bt.c.claimed_by == holder)
            .values(done_at=datetime.now(UTC), error=error)
        )


def handle(service: BuildService, claimed: Claim, reporter: Reporter | None) -> BuildReport | None:
    """Build the out-of-date dependents of the claimed dataset; None when nothing reads it."""
    service.reload()  # a long-running worker builds the code as it is now
    graph = service.pipelines.graph
    readers = graph.dependents_of(claimed.dataset) if claimed.dataset else []
    targets = [o for key in readers for o in graph.nodes[key].outputs]
    if not targets:
        return None
    return service.build(targets, reporter=reporter)


def run_worker(
    service: BuildService,
    *,
    once: bool = False,
    poll: float = 0.2,
    reporter: Reporter | None = None,
    on_build: Callable[[Claim, BuildReport | None], None] | None = None,
) -> WorkerReport:
    """Take triggers until stopped (or, with ``once``, until none is pending)."""
    holder = f"worker-{new_id()}"
    lease = service.settings.build_lease_seconds
    engine = service.lake.engine
    report = WorkerReport()
    while True:
        claimed = claim(engine, service.lake.namespace, holder, lease)
        if claimed is None:
            if once:
                return report
            time.sleep(poll)
            continue
        error: str | None = None
        with heartbeat(partial(_renew, engine, claimed, holder), lease / 3):
            try:
                built = handle(service, claimed, reporter)
            except StrataError as exc:  # a broken pipeline: retrying would not help
                built, error = None, exc.message
        if built is not None and built.failed:
            error = "; ".join(
                f"{st.transform}: {st.reason}" for st in built.steps if st.outcome == "failed"
            )
        finish(engine, claimed, holder, error)
        report.triggers += len(claimed.ids)
        if built is not None:
            report.builds.append({"dataset": claimed.dataset, **built.to_dict()})
        if on_build is not None:
            on_build(claimed, built)
