"""Builds started over HTTP: run by the app's one build service on a thread of their own,
one at a time per server, their progress written to the store as they go.

A request answers at once (202) with the build's id; the build runs as ``strata build``
would, its runs land in the lineage store, and ``GET …/builds/{id}`` on any server of
the store tells which transforms are planned, running and done
(:mod:`strata.builds.state.requests`). A server that stops ends its unfinished requests
ABORTED. While it has taken requests, a server holds a lease renewed on a heartbeat; one
killed outright (or hung) stops renewing it, and once it expires (``build_lease_seconds``)
any server reading the requests ends them ABORTED, "the server running it stopped" (its
runs are reaped as any dead builder's are). The next ``strata serve`` of a SQLite store,
the store's only server, ends them at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

from strata.api.views import ts
from strata.builds.execution.builder import BuildReport, Step
from strata.builds.execution.leasing import heartbeat
from strata.builds.service import BuildService
from strata.builds.staleness.causes import Outcome
from strata.builds.state.leases import Taken
from strata.builds.state.requests import BuildRequest, server_lease
from strata.errors import NotFound, StoreError, StrataError
from strata.ids import new_id
from strata.lake.spark import running as spark_running

log = logging.getLogger(__name__)
KEEP = 100  # builds listed by GET /strata/builds
_SPARK_POLL_S = 0.25


def _now() -> datetime:
    return datetime.now(UTC)


def as_json(r: BuildRequest) -> dict[str, Any]:
    """A request as the API answers it."""
    p = r.progress
    return {
        "id": r.id,
        "dataset": r.dataset,
        "force": r.force,
        "state": r.state,
        "requestedAt": ts(r.requested_at),
        "startedAt": ts(r.started_at),
        "endedAt": ts(r.ended_at),
        "planned": p.get("planned", []),
        "running": p.get("running", []),
        "done": len(p.get("transforms", [])),
        "transforms": p.get("transforms", []),
        "waitingFor": p.get("waitingFor"),
        "sparkStarting": bool(p.get("sparkStarting")),
        "error": r.error,
        "run": r.run,
    }


class _Recorder:
    """The builder's Reporter: keeps the build's progress and writes it to the store at
    each step, so a poll on any server sees it."""

    def __init__(self, tasks: BuildTasks, request_id: str) -> None:
        self.tasks = tasks
        self.id = request_id
        self.planned_keys: list[str] = []
        self.running: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.waiting_for: str | None = None
        self.spark_starting = False
        self.ended = threading.Event()
        self.lock = threading.Lock()  # one save at a time: the last one holds the latest

    def progress(self) -> dict[str, Any]:
        return {
            "planned": self.planned_keys,
            "running": self.running,
            "transforms": self.steps,
            "waitingFor": self.waiting_for,
            "sparkStarting": self.spark_starting,
        }

    def _save(self) -> None:
        with self.lock:
            self.tasks.save(self.id, progress=self.progress())

    def planned(self, keys: Sequence[str]) -> None:
        self.planned_keys = list(keys)
        self._save()

    def started(self, key: str) -> None:
        self.running.append(key)
        self.waiting_for = None
        if not self.spark_starting and not spark_running():
            # A server's first build starts Spark, which takes a while: say so until it runs.
            self.spark_starting = True
            threading.Thread(target=self._until_spark_runs, daemon=True).start()
        self._save()

    def _until_spark_runs(self) -> None:
        while not spark_running() and not self.ended.wait(_SPARK_POLL_S):
            pass
        self.spark_starting = False
        if not self.ended.is_set():
            self._save()

    def finished(self, step: Step) -> None:
        if step.transform in self.running:
            self.running.remove(step.transform)
        self.steps.append(step.to_dict())
        self._save()

    def waiting(self, key: str, taken: Taken) -> None:
        self.waiting_for = taken.describe()
        self._save()


class BuildTasks:
    """Queues builds of one dataset each and runs them in order on one thread."""

    def __init__(self, service: BuildService) -> None:
        self.service = service
        self.state = service.state
        self.holder = f"server-{new_id()}"
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-build")
        self._closing = threading.Event()
        self._lease = server_lease(self.holder)
        self._seconds = service.settings.build_lease_seconds
        self._alive: ExitStack | None = None
        self._lock = threading.Lock()

    def start(self, dataset: str, force: bool = False) -> dict[str, Any]:
        """Queue a build of ``dataset``; a dataset no pipeline writes is refused here,
        before anything is queued."""
        self.service.builder().plan([dataset])
        self.hold_lease()
        request = BuildRequest(
            id=new_id(),
            dataset=dataset,
            force=force,
            state="QUEUED",
            holder=self.holder,
            requested_at=_now(),
            started_at=None,
            ended_at=None,
            progress={"planned": [], "running": [], "transforms": [], "waitingFor": None},
            error=None,
            run=None,
        )
        self.state.add_build_request(request)
        self._pool.submit(self._run, request)
        return as_json(request)

    def get(self, request_id: str) -> dict[str, Any]:
        found = self.state.build_request(request_id)
        if found is None:
            raise NotFound(
                f"no build {request_id!r}; list them with GET /api/v1/strata/builds",
                build=request_id,
            )
        return as_json(found)

    def recent(self) -> list[dict[str, Any]]:
        """The last builds asked for, newest first."""
        return [as_json(r) for r in self.state.build_requests(KEEP)]

    def save(self, request_id: str, **values: Any) -> None:
        # A store out of reach must not stop the build: the next save writes it all.
        try:
            self.state.update_build_request(request_id, **values)
        except StoreError as exc:
            log.warning("could not record the progress of build %s: %s", request_id, exc)

    def end_orphans(self) -> int:
        """End every server's unfinished requests ABORTED: for a server that knows it is
        the store's only one (a SQLite store's, :mod:`strata.store.sole_server`), what
        is unfinished was left by a server that died."""
        return self.state.abandon_build_requests(None, "the server running it died")

    def hold_lease(self) -> None:
        """Hold this server's lease from its first request on, renewed (taken again,
        should a stall have let it lapse) every third of its length."""
        with self._lock:
            if self._alive is not None:
                return
            self._renew()
            stack = ExitStack()
            stack.enter_context(heartbeat(self._renew, self._seconds / 3))
            self._alive = stack

    def _renew(self) -> None:
        self.state.try_lease(self._lease, self.holder, self._seconds)

    def close(self) -> None:
        self._closing.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            alive, self._alive = self._alive, None
        if alive is not None:
            alive.close()
        try:
            self.state.abandon_build_requests(self.holder, "the server stopped")
            if alive is not None:
                self.state.release_lease(self._lease, self.holder)
        except StoreError as exc:
            log.warning("could not end this server's unfinished builds: %s", exc)

    def _run(self, request: BuildRequest) -> None:
        if self._closing.is_set():
            return
        recorder = _Recorder(self, request.id)
        self.save(request.id, state="RUNNING", started_at=_now())
        report: BuildReport | None = None
        try:
            report = self.service.build([request.dataset], force=request.force, reporter=recorder)
        except StrataError as exc:
            error: str | None = str(exc)
        except Exception as exc:  # a server thread must outlive any one build
            log.exception("build %s failed", request.id)
            error = f"{type(exc).__name__}: {exc}"
        else:
            failed = [s.transform for s in report.steps if s.outcome is Outcome.FAILED]
            error = f"failed: {', '.join(failed)}" if failed else None
        recorder.ended.set()
        recorder.spark_starting = False
        state = "COMPLETED" if report is not None and not report.failed else "FAILED"
        with recorder.lock:
            self.save(
                request.id,
                state=state,
                error=error,
                run=report.run if report is not None else None,
                ended_at=_now(),
                progress={**recorder.progress(), "running": []},
            )
