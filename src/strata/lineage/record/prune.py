"""Lineage retention: runs older than a limit deleted with their events, states, inputs,
input facets and check results, in small batches that each hold the writer lock for a
moment (:class:`Pacer`), so the fold goes on between them.

Never deleted: a run that produced a lake version (its provenance is the catalog's, kept
as long as the version's row, purged or not), the newest run of each job, and a run with
a child run left (children go first; their parent in a later batch). A dataset version
the deleted run produced goes with it, unless it is its dataset's current version or
another run read it: then it stays, with no producing run. A job version's latest run
moves to the newest one left; a job version with no run left goes, as the fold drops
one. Events that belong to no run (dataset and job events) are left alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.lineage.record import jobs
from strata.lineage.record.apply import lock_writers
from strata.store.bulk import chunks
from strata.store.engine import read_tx, write_tx
from strata.store.owners import check_results as stored_checks
from strata.store.owners import events as stored_events
from strata.store.owners.datasets import columns as edges_of
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.runs import inputs as bound
from strata.store.owners.runs import rows as stored_runs
from strata.store.owners.runs import said as run_said

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()
_RUNS = stored_runs.relation()
_R, _DV = _RUNS.c, _VERSIONS.c


@dataclass
class Pruned:
    """What a pass deleted (or, dry, would delete at least)."""

    runs: int = 0
    events: int = 0
    versions: int = 0  # dataset versions deleted with the run that produced them
    unlinked: int = 0  # versions kept (current, or read by a kept run) without their run
    batches: int = 0
    kept_lake: int = 0  # runs older than the limit kept: they produced lake versions
    kept: int = 0  # runs older than the limit kept otherwise (newest, a child left, …)

    def to_dict(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "events": self.events,
            "versions": self.versions,
            "unlinked_versions": self.unlinked,
            "batches": self.batches,
            "kept_lake_runs": self.kept_lake,
            "kept_other_runs": self.kept,
        }


def _old(cutoff: datetime) -> sa.ColumnElement[bool]:
    """Runs whose every event is older than ``cutoff`` (created_at leads: it is indexed)."""
    return sa.and_(_R.created_at < cutoff, _R.updated_at < cutoff)


def _lake_producer() -> sa.ColumnElement[bool]:
    return sa.exists().where(_DV.run_uuid == _R.uuid, _DV.transaction_uuid.is_not(None))


def _deletable(cutoff: datetime) -> sa.ColumnElement[bool]:
    newer = stored_runs.relation("newer")
    child = stored_runs.relation("child")
    return sa.and_(
        _old(cutoff),
        ~_lake_producer(),
        sa.exists().where(
            newer.c.job_uuid == _R.job_uuid,
            sa.or_(
                newer.c.created_at > _R.created_at,
                sa.and_(newer.c.created_at == _R.created_at, newer.c.uuid > _R.uuid),
            ),
        ),
        ~sa.exists().where(child.c.parent_run_uuid == _R.uuid),
    )


@dataclass
class Pacer:
    """How many runs the next batch takes, and how long to leave the writer lock free
    after one: a batch aims at ``target`` seconds (its size doubling or halving to get
    there), and each is followed by ``rest`` times its own time, so the pass holds the
    lock at most ``1 / (1 + rest)`` of the time and a fold never waits for long."""

    size: int = 100
    target: float = 0.05
    rest: float = 4.0
    smallest: int = 10
    largest: int = 2000

    def after(self, seconds: float) -> float:
        """Adjust to a batch that took ``seconds``; how long to pause now."""
        if seconds < self.target / 2:
            self.size = min(self.largest, self.size * 2)
        elif seconds > self.target * 2:
            self.size = max(self.smallest, self.size // 2)
        return seconds * self.rest


def expire(engine: Engine, cutoff: datetime, *, pacer: Pacer | None = None) -> Pruned:
    """Delete what the rules allow of the runs older than ``cutoff``, batch by batch
    (newest first: a reader goes before the writer of what it read, a child before its
    parent), until a batch finds nothing."""
    pacer = pacer or Pacer()
    out = Pruned()
    while True:
        started = time.perf_counter()
        with write_tx(engine) as conn:
            lock_writers(conn)
            newest = sa.select(_R.uuid).where(_deletable(cutoff)).order_by(_R.created_at.desc())
            found = sorted(_uuids(conn, newest.limit(pacer.size)))
            if not found:
                break
            _delete_runs(conn, found, out)
            out.batches += 1
        time.sleep(pacer.after(time.perf_counter() - started))
    with read_tx(engine) as conn:
        _count_kept(conn, cutoff, out)
    return out


def would_expire(engine: Engine, cutoff: datetime) -> Pruned:
    """A dry run: the runs a pass deletes at least (their parents may follow them)."""
    out = Pruned()
    with read_tx(engine) as conn:
        out.runs = int(
            conn.execute(sa.select(sa.func.count()).where(_deletable(cutoff))).scalar() or 0
        )
        out.events = stored_events.count_of_runs(conn, sa.select(_R.uuid).where(_deletable(cutoff)))
        _count_kept(conn, cutoff, out)
    return out


def _count_kept(conn: Connection, cutoff: datetime, out: Pruned) -> None:
    older = int(conn.execute(sa.select(sa.func.count()).where(_old(cutoff))).scalar() or 0)
    out.kept_lake = int(
        conn.execute(sa.select(sa.func.count()).where(_old(cutoff), _lake_producer())).scalar() or 0
    )
    out.kept = older - out.kept_lake - (0 if out.batches else out.runs)


def _delete_runs(conn: Connection, runs: list[str], out: Pruned) -> None:
    """Delete ``runs`` and what hangs on them, children of the schema first."""
    produced = sorted(_uuids(conn, sa.select(_DV.uuid).where(_DV.run_uuid.in_(runs))))
    run_said.delete_said(conn, runs)
    bound.delete_of_runs(conn, runs)
    stored_checks.delete_of_runs(conn, runs)
    out.events += stored_events.delete_of_runs(conn, runs)
    gone, kept = _versions_to_delete(conn, produced)
    edges_of.delete_of_versions(conn, gone)
    stored_versions.delete(conn, gone)
    stored_versions.unlink(conn, kept)
    out.versions += len(gone)
    out.unlinked += len(kept)
    versions = _uuids(conn, sa.select(_R.job_version_uuid).where(_R.uuid.in_(runs)))
    out.runs += stored_runs.delete(conn, runs)
    # A job version's latest run moves to the newest left; one with none left goes.
    jobs.refresh_job_versions(conn, versions)


def _versions_to_delete(conn: Connection, produced: list[str]) -> tuple[list[str], list[str]]:
    """Of versions whose run goes: those that go too, and those kept (a dataset's current
    version, or one another run read)."""
    if not produced:
        return [], []
    d = _DATASETS.c
    held = bound.read_versions(conn, produced)
    for part in chunks(sorted(produced), 500):
        held |= _uuids(
            conn, sa.select(d.current_version_uuid).where(d.current_version_uuid.in_(part))
        )
    return sorted(set(produced) - held), sorted(held)


def _uuids(conn: Connection, query: sa.Select[tuple[str | None]]) -> set[str]:
    return {str(u) for u in conn.execute(query).scalars() if u is not None}
