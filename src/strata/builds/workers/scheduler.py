"""Firing schedules: what the worker does when a schedule is due, and what ``strata
schedules`` shows.

Each due firing is taken by inserting its row (schedule, due time): the worker whose
insert lands builds it, any other finds the row and moves on, so several workers on one
store build each firing once. A firing builds what is out of date among its targets and
records how that went (the build's run and state, or ``NOTHING`` when all was fresh).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from strata.builds.execution.builder import Reporter
from strata.builds.execution.leasing import heartbeat
from strata.builds.service import BuildService
from strata.builds.staleness.causes import Outcome
from strata.builds.state.schedules import Firing
from strata.builds.workers.schedules import Schedule, gather
from strata.errors import PipelineError, StrataError
from strata.lake.branches import MAIN

log = logging.getLogger(__name__)
RECHECK = timedelta(seconds=30)  # how often a waiting worker reads the schedules again
_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass
class Fired:
    """One firing a worker built."""

    schedule: str
    due_at: datetime
    outcome: str
    run: str | None
    error: str | None = None
    branch: str = MAIN

    def to_dict(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule,
            "branch": self.branch,
            "due_at": self.due_at.isoformat(),
            "outcome": self.outcome,
            "run": self.run,
            "error": self.error,
        }


def declared(service: BuildService) -> list[Schedule]:
    """The schedules of ``strata.toml`` and the pipelines, checked."""
    if not service.settings.schedules and not service.paths:
        return []
    pipelines = service.pipelines if service.paths else None
    return gather(service.settings.schedules, pipelines)


@dataclass
class Clock:
    """When the worker next looks at its schedules."""

    schedules: list[Schedule] = field(default_factory=list)
    next_look: datetime = _NEVER

    def due(self, now: datetime) -> bool:
        return now >= self.next_look


def fire_due(
    service: BuildService, holder: str, clock: Clock, reporter: Reporter | None = None
) -> list[Fired]:
    """Build every firing of the service's branch due now that no other worker took;
    returns what it built and sets when to look again (the next due time, or a recheck
    of the declarations)."""
    now = datetime.now(UTC)
    branch = service.lake.branch
    try:
        clock.schedules = [s for s in declared(service) if s.branch == branch]
    except PipelineError:  # the triggers' path reports it, with their retries
        clock.schedules = []
    if not clock.schedules:
        clock.next_look = now + RECHECK
        return []
    names = [s.name for s in clock.schedules]
    lapsed = service.state.end_lapsed_firings(branch)
    if lapsed:
        log.warning("%d firing(s) on %s lost their worker mid-build; ended ABORTED", lapsed, branch)
    seen = service.state.register_schedules(branch, names)
    last = service.state.last_firings(branch, names)
    done: list[Fired] = []
    for s in clock.schedules:
        after = max(seen[s.name], last.get(s.name, seen[s.name]))
        for due in s.to_fire(after, now):
            if service.state.take_firing(branch, s.name, due, holder, _hold(service)):
                done.append(_fire(service, s, due, holder, reporter))
    now = datetime.now(UTC)
    upcoming = min(s.next_after(now) for s in clock.schedules)
    clock.next_look = min(upcoming, now + RECHECK)
    return done


STOPPED = "the worker stopped during this firing's build (its runs ended ABORTED)"


def _hold(service: BuildService) -> float:
    """How long a firing stays held without renewal: a transform's lease."""
    return service.settings.build_lease_seconds


def _fire(
    service: BuildService, s: Schedule, due: datetime, holder: str, reporter: Reporter | None
) -> Fired:
    """Build ``s``'s targets for the firing due at ``due``, holding it while the build
    runs, and record how it went."""
    hold = _hold(service)
    renew = partial(service.state.renew_firing, s.branch, s.name, due, holder, hold)
    try:
        with heartbeat(renew, hold / 3):
            service.reload()
            targets = s.datasets(service.pipelines)
            report = service.build(targets, force=s.force, reporter=reporter)
    except StrataError as exc:
        service.state.finish_firing(s.branch, s.name, due, "FAILED", None, exc.message)
        log.warning("schedule %s (due %s) failed: %s", s.name, due, exc.message)
        return Fired(s.name, due, "FAILED", None, exc.message)
    except BaseException:  # stopped (Ctrl-C, SIGTERM): the firing ends, not running for good
        _end_stopped(service, s, due)
        raise
    ran = any(st.outcome.ran for st in report.steps)
    failed = [st for st in report.steps if st.outcome is Outcome.FAILED]
    error = "; ".join(f"{st.transform}: {st.reason}" for st in failed) or None
    outcome = report.state if ran else "NOTHING"
    run = report.run if ran else None
    service.state.finish_firing(s.branch, s.name, due, outcome, run, error)
    return Fired(s.name, due, outcome, run, error, s.branch)


def _end_stopped(service: BuildService, s: Schedule, due: datetime) -> None:
    """Record a firing whose worker stopped mid-build as ``ABORTED``; the stop goes on
    whatever this write meets."""
    try:
        service.state.finish_firing(s.branch, s.name, due, "ABORTED", None, STOPPED)
    except Exception:
        log.exception("schedule %s (due %s): could not record that it stopped", s.name, due)


def overview(service: BuildService, now: datetime | None = None) -> list[dict[str, Any]]:
    """Each schedule with its last firing, its outcome and its next firing."""
    now = now or datetime.now(UTC)
    try:
        found = declared(service)
    except PipelineError:
        found = gather(service.settings.schedules, None)
    out = []
    for s in found:
        last: list[Firing] = service.state.firings(s.branch, s.name, 1)
        out.append(
            {
                **s.to_dict(),
                "last": last[0].to_dict() if last else None,
                "next_due_at": s.next_after(now).isoformat(),
            }
        )
    return out
