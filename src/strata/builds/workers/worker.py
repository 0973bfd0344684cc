"""Commit-triggered and scheduled builds: the worker fires due schedules
(:mod:`strata.builds.workers.scheduler`), runs retention and the archive tier daily where a policy
exists (:mod:`strata.retention`), and takes triggers (the commit outbox, see
:mod:`strata.store.owners.triggers`) and builds the out-of-date dependents of each committed
dataset. The new versions' own triggers carry the build down the graph.

No trigger is lost. A build that ran and failed in the transform itself is recorded
(the run is FAILED) and its trigger is done: the next commit or build tries again. A
failure that can pass (a commit conflict, pipelines that do not load, the store or
Spark out of reach) leaves the trigger pending, tried again after a backoff. A worker
that retakes a dead worker's trigger ends that worker's orphaned runs ABORTED.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from strata.builds.execution.builder import BuildReport, Reporter
from strata.builds.execution.leasing import heartbeat
from strata.builds.execution.orphans import reap_expired_leases
from strata.builds.execution.run_events import Emitter
from strata.builds.service import BuildService
from strata.builds.staleness.causes import Outcome
from strata.builds.workers.scheduler import Clock, Fired, fire_due
from strata.errors import PipelineError, StoreError, StrataError, can_pass
from strata.ids import new_id
from strata.retention.archive import Archive
from strata.retention.lineage import LineageRetention
from strata.retention.service import DailyPass, Retention, RetentionReport
from strata.store.owners.triggers import Claim, backoff

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Attempt:
    """What handling one claim came to."""

    built: BuildReport | None  # None: nothing reads the dataset, or nothing ran
    error: str | None = None
    retry_in: float | None = None  # seconds until it is tried again; None: done
    raised: Exception | None = None  # what stopped the build before it started

    @property
    def outcome(self) -> str:
        if self.retry_in is not None:
            return "tried again"
        if self.built is None:
            return "nothing reads it"
        return f"build {self.built.state.lower()}"


@dataclass
class WorkerReport:
    triggers: int = 0
    builds: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # left to retry
    firings: list[dict[str, Any]] = field(default_factory=list)  # schedules it fired
    retention: list[dict[str, Any]] = field(default_factory=list)  # retention passes it ran
    archive: list[dict[str, Any]] = field(default_factory=list)  # archive passes it ran
    lineage: list[dict[str, Any]] = field(default_factory=list)  # lineage passes it ran

    def to_dict(self) -> dict[str, Any]:
        return {
            "triggers": self.triggers,
            "builds": self.builds,
            "pending": self.pending,
            "firings": self.firings,
            "retention": self.retention,
            "archive": self.archive,
            "lineage": self.lineage,
        }


class _Daily:
    """The passes a worker runs once a day where configured: lake retention, the
    archive tier, and lineage retention."""

    def __init__(self, service: BuildService) -> None:
        lake = service.lake
        self.retention = DailyPass(Retention(lake))
        self.archive = DailyPass(Archive(lake))
        self.lineage = DailyPass(LineageRetention(lake.engine, lake.settings))

    def run_due(
        self,
        now: datetime,
        report: WorkerReport,
        on_retention: Callable[[RetentionReport], None] | None,
    ) -> None:
        swept = self.retention.run_if_due(now)
        if swept is not None:
            report.retention.append({k: v for k, v in swept.to_dict().items() if k != "versions"})
            if on_retention is not None:
                on_retention(swept)
        moved = self.archive.run_if_due(now)
        if moved is not None:
            report.archive.append({k: v for k, v in moved.to_dict().items() if k != "datasets"})
        pruned = self.lineage.run_if_due(now)
        if pruned is not None:
            report.lineage.append(pruned.to_dict())


def handle(service: BuildService, claimed: Claim, reporter: Reporter | None) -> BuildReport | None:
    """Build the out-of-date dependents of the claimed dataset; None when nothing reads it."""
    service.reload()  # a long-running worker builds the code as it is now
    graph = service.pipelines.graph
    readers = graph.dependents_of(claimed.dataset)
    targets = [o for key in readers for o in graph.nodes[key].outputs]
    if not targets:
        return None
    return service.build(targets, reporter=reporter)


def attempt(service: BuildService, claimed: Claim, reporter: Reporter | None) -> Attempt:
    """Handle ``claimed``; a failure that can pass is kept for a retry, not recorded."""
    try:
        built = handle(service, claimed, reporter)
    except Exception as exc:
        if not can_pass(exc):
            if not isinstance(exc, StrataError):
                raise  # a fault of Strata's: loud; the claim runs out and is taken again
            return Attempt(None, exc.message, raised=exc)
        message = exc.message if isinstance(exc, StrataError) else f"{type(exc).__name__}: {exc}"
        return Attempt(None, message, retry_in=0.0, raised=exc)
    if built is None or not built.failed:
        return Attempt(built)
    failed = [st for st in built.steps if st.outcome is Outcome.FAILED]
    error = "; ".join(f"{st.transform}: {st.reason}" for st in failed)
    return Attempt(built, error, retry_in=0.0 if any(st.retryable for st in failed) else None)


def run_worker(
    service: BuildService,
    *,
    once: bool = False,
    poll: float = 0.2,
    reporter: Reporter | None = None,
    on_build: Callable[[Claim, Attempt], None] | None = None,
    on_fire: Callable[[Fired], None] | None = None,
    on_retention: Callable[[RetentionReport], None] | None = None,
) -> WorkerReport:
    """Fire due schedules and take triggers until stopped (or, with ``once``, until every
    due firing was built and every pending trigger was tried once: triggers waiting out
    a backoff are tried too, and pipelines that do not load raise :class:`PipelineError`
    after their triggers were put back)."""
    holder = f"worker-{new_id()}"
    report = WorkerReport()
    tried: set[int] = set()
    outage = 0
    clock = Clock()
    daily = _Daily(service)
    while True:
        try:
            if clock.due(datetime.now(UTC)):
                for f in fire_due(service, holder, clock, reporter):
                    report.firings.append(f.to_dict())
                    if on_fire is not None:
                        on_fire(f)
            daily.run_due(datetime.now(UTC), report, on_retention)
            claimed = _claim(service, holder, tried if once else (), once)
        except StoreError as exc:
            if once:
                raise
            outage += 1
            log.warning("the store is out of reach, trying again: %s", exc.message)
            time.sleep(backoff(outage))
            continue
        outage = 0
        if claimed is None:
            if once:
                return report
            wait = (clock.next_look - datetime.now(UTC)).total_seconds()
            time.sleep(max(0.0, min(poll, wait)))
            continue
        done = _work(service, claimed, holder, reporter)
        report.triggers += len(claimed.ids)
        if done.built is not None:
            report.builds.append({"dataset": claimed.dataset, **done.built.to_dict()})
        if done.retry_in is not None:
            # Back in the queue: --once does not take it again in this run.
            tried.update(claimed.ids)
            report.pending.append({"dataset": claimed.dataset, "error": done.error})
        if on_build is not None:
            on_build(claimed, done)
        if once and isinstance(done.raised, PipelineError):
            raise done.raised  # the triggers are back in the queue; fix and run again


def _claim(
    service: BuildService, holder: str, tried: set[int] | tuple[()], once: bool
) -> Claim | None:
    lease = service.settings.build_lease_seconds
    claimed = service.state.claim(holder, lease, skip=tried, waiting=once)
    if claimed is not None and claimed.retaken:
        # Another worker held it and stopped: its runs still RUNNING are orphans.
        reap_expired_leases(service.state, Emitter(service.lake.engine))
    return claimed


def _work(service: BuildService, claimed: Claim, holder: str, reporter: Reporter | None) -> Attempt:
    state = service.state
    lease = service.settings.build_lease_seconds
    with heartbeat(partial(state.renew_claim, claimed, holder), lease / 3):
        done = attempt(service, claimed, reporter)
    if done.retry_in is None:
        state.finish_claim(claimed, holder, done.error)
        return done
    wait = state.retry_later(claimed, holder, done.error or "")
    return Attempt(done.built, done.error, retry_in=wait, raised=done.raised)
