"""Data check results as the build reads them: the stored rows of
:mod:`strata.store.owners.check_results` turned back into :class:`CheckResult`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.builds.checks.check import CheckResult
from strata.store.owners import check_results as stored
from strata.store.owners.datasets import versions as stored_versions

_VERSIONS = stored_versions.relation()

_V = _VERSIONS.c


@dataclass(frozen=True)
class StoredResult:
    """A check result as history keeps it: the run, transform and version it judged."""

    result: CheckResult
    run: str
    job: str
    version: int | None
    recorded_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.result.to_dict(),
            "run": self.run,
            "transform": self.job,
            "version": self.version,
            "recorded_at": self.recorded_at.isoformat(),
        }


#: One run's check results and the version of each dataset they judged (an output's is
#: absent when the run committed nothing).
RunChecks = tuple[str, Sequence[CheckResult], Mapping[str, int]]


def record(
    conn: Connection,
    job: str,
    runs: Sequence[RunChecks],
    uuids: Mapping[str, str],
    now: datetime,
) -> None:
    """Keep the results of ``runs`` of ``job``, in one statement."""
    rows = [
        {
            "run_uuid": run,
            "job": job,
            "dataset_uuid": uuids[r.dataset],
            "commit_id": versions.get(r.dataset),
            "side": r.side,
            "partition_key": r.partition,
            "name": r.name,
            "expectation": r.expectation,
            "on_error": r.on_error,
            "outcome": r.outcome,
            "observed": {**r.observed, "_assertion": r.assertion, "_column": r.column},
            "failing": r.failing,
            "samples": list(r.samples),
            "recorded_at": now,
        }
        for run, results, versions in runs
        for r in results
        if r.dataset in uuids
    ]
    stored.insert(conn, rows)


def _stored(found: stored.Found) -> StoredResult:
    observed = dict(found.observed or {})
    assertion = observed.pop("_assertion", "custom")
    column = observed.pop("_column", None)
    result = CheckResult(
        found.name,
        found.dataset,
        found.side,
        found.expectation,
        assertion,
        column,
        found.on_error,
        found.outcome == "passed",
        observed,
        found.failing,
        list(found.samples or []),
        found.partition_key,
    )
    return StoredResult(result, found.run, found.job, found.commit_id, found.recorded_at)


def of_version(conn: Connection, dataset_uuid: str, commit_id: int) -> list[StoredResult]:
    """Every result that judged ``commit_id`` of the dataset (as an input or an output),
    and those of the run that built it (its preconditions on its inputs)."""
    return [_stored(f) for f in stored.of_version(conn, dataset_uuid, commit_id)]


def failed_runs_since(
    conn: Connection, dataset_uuid: str, job: str | None, after: datetime
) -> list[StoredResult]:
    """Results after ``after`` of runs that committed nothing to the dataset (see
    :func:`strata.store.owners.check_results.failed_runs_since`)."""
    return [_stored(f) for f in stored.failed_runs_since(conn, dataset_uuid, job, after)]


def of_run(conn: Connection, run: str) -> list[StoredResult]:
    return [_stored(f) for f in stored.of_run(conn, run)]


def last_failures(conn: Connection, jobs: Collection[str]) -> dict[str, list[StoredResult]]:
    """Per transform, the failed (FAIL) results of its latest run that had any."""
    return {
        job: [_stored(f) for f in found] for job, found in stored.last_failures(conn, jobs).items()
    }


def committed_at(conn: Connection, dataset_uuid: str, commit_id: int) -> datetime | None:
    q = sa.select(_V.created_at).where(_V.dataset_uuid == dataset_uuid, _V.commit_id == commit_id)
    return conn.execute(q).scalar_one_or_none()
