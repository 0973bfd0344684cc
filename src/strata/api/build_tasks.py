"""Builds started over HTTP: run by the app's one build service on a thread of their own,
one at a time per server, with their progress kept for pages and scripts to poll.

A request answers at once (202) with the build's id; the build runs as ``strata build``
would, its runs land in the lineage store as they go, and ``GET …/builds/{id}`` tells
which transforms are planned, running and done. The last ``KEEP`` builds are kept, in
memory only: the runs themselves are in the store for good.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from strata.builds.builder import Step
from strata.builds.causes import Outcome
from strata.builds.service import BuildService
from strata.errors import NotFound, StrataError
from strata.ids import new_id

KEEP = 100


def _now() -> datetime:
    return datetime.now(UTC)


def _ts(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat().replace("+00:00", "Z")


@dataclass
class BuildTask:
    """One requested build and what it has done so far."""

    id: str
    dataset: str
    force: bool
    requested_at: datetime
    state: str = "QUEUED"  # QUEUED, RUNNING, COMPLETED, FAILED
    planned: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    waiting_for: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    error: str | None = None
    run: str | None = None  # the build's own parent run, once it has one

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "dataset": self.dataset,
            "force": self.force,
            "state": self.state,
            "requestedAt": _ts(self.requested_at),
            "startedAt": _ts(self.started_at),
            "endedAt": _ts(self.ended_at),
            "planned": list(self.planned),
            "running": list(self.running),
            "done": len(self.steps),
            "transforms": [s.to_dict() for s in self.steps],
            "waitingFor": self.waiting_for,
            "error": self.error,
            "run": self.run,
        }


class _Recorder:
    """The builder's Reporter: writes what it hears into a task, under the tasks' lock."""

    def __init__(self, task: BuildTask, lock: threading.Lock) -> None:
        self.task = task
        self.lock = lock

    def planned(self, keys: Sequence[str]) -> None:
        with self.lock:
            self.task.planned = list(keys)

    def started(self, key: str) -> None:
        with self.lock:
            self.task.running.append(key)
            self.task.waiting_for = None

    def finished(self, step: Step) -> None:
        with self.lock:
            if step.transform in self.task.running:
                self.task.running.remove(step.transform)
            self.task.steps.append(step)

    def waiting(self, key: str, holder: str) -> None:
        with self.lock:
            self.task.waiting_for = f"{key} (held by {holder})"


class BuildTasks:
    """Queues builds of one dataset each and runs them in order on one thread."""

    def __init__(self, service: BuildService) -> None:
        self.service = service
        self._lock = threading.Lock()
        self._tasks: OrderedDict[str, BuildTask] = OrderedDict()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-build")

    def start(self, dataset: str, force: bool = False) -> BuildTask:
        """Queue a build of ``dataset``; a dataset no pipeline writes is refused here,
        before anything is queued."""
        self.service.builder().plan([dataset])
        task = BuildTask(id=new_id(), dataset=dataset, force=force, requested_at=_now())
        with self._lock:
            self._tasks[task.id] = task
            while len(self._tasks) > KEEP:
                self._tasks.popitem(last=False)
        self._pool.submit(self._run, task)
        return task

    def get(self, task_id: str) -> dict[str, Any]:
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                raise NotFound(
                    f"no build {task_id!r} on this server (it keeps its last {KEEP}); "
                    "list them with GET /api/v1/strata/builds"
                )
            return task.to_dict()

    def recent(self) -> list[dict[str, Any]]:
        """The kept builds, newest first."""
        with self._lock:
            return [t.to_dict() for t in reversed(self._tasks.values())]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, task: BuildTask) -> None:
        with self._lock:
            task.state, task.started_at = "RUNNING", _now()
        error: str | None
        try:
            report = self.service.build(
                [task.dataset], force=task.force, reporter=_Recorder(task, self._lock)
            )
        except StrataError as exc:
            state, error, run = "FAILED", str(exc), None
        except Exception as exc:  # a server thread must outlive any one build
            state, error, run = "FAILED", f"{type(exc).__name__}: {exc}", None
        else:
            failed = [s.transform for s in report.steps if s.outcome is Outcome.FAILED]
            state = "FAILED" if report.failed else "COMPLETED"
            error = f"failed: {', '.join(failed)}" if failed else None
            run = report.run
        with self._lock:
            task.state, task.error, task.run = state, error, run
            task.running.clear()
            task.ended_at = _now()
