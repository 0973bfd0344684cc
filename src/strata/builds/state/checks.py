"""The check results table: what each data check of a build found."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.builds.checks.check import CheckResult
from strata.store.bulk import chunks
from strata.store.schema import check_results, dataset_versions, datasets

_C, _D, _V = check_results.c, datasets.c, dataset_versions.c


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


def record(
    conn: Connection,
    run: str,
    job: str,
    results: Sequence[CheckResult],
    uuids: Mapping[str, str],
    versions: Mapping[str, int],
    now: datetime,
) -> None:
    """Keep ``results`` of ``run`` (``versions``: the version each dataset was judged at;
    an output's is absent when the run committed nothing)."""
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
        for r in results
        if r.dataset in uuids
    ]
    if rows:
        conn.execute(check_results.insert(), rows)


_COLUMNS = (
    _D.name,
    _C.run_uuid,
    _C.job,
    _C.commit_id,
    _C.side,
    _C.partition_key,
    _C.name,
    _C.expectation,
    _C.on_error,
    _C.outcome,
    _C.observed,
    _C.failing,
    _C.samples,
    _C.recorded_at,
)


def _stored(row: Any) -> StoredResult:
    observed = dict(row.observed or {})
    assertion = observed.pop("_assertion", "custom")
    column = observed.pop("_column", None)
    result = CheckResult(
        row[6],
        row[0],
        row.side,
        row.expectation,
        assertion,
        column,
        row.on_error,
        row.outcome == "passed",
        observed,
        row.failing,
        list(row.samples or []),
        row.partition_key,
    )
    return StoredResult(result, row.run_uuid, row.job, row.commit_id, row.recorded_at)


def _select() -> sa.Select[Any]:
    return sa.select(*_COLUMNS).select_from(
        check_results.join(datasets, _D.uuid == _C.dataset_uuid)
    )


def of_version(conn: Connection, dataset_uuid: str, commit_id: int) -> list[StoredResult]:
    """Every result that judged ``commit_id`` of the dataset (as an input or an output),
    and those of the run that built it (its preconditions on its inputs)."""
    producer = sa.select(_V.run_uuid).where(
        _V.dataset_uuid == dataset_uuid, _V.commit_id == commit_id, _V.run_uuid.is_not(None)
    )
    q = _select().where(
        sa.or_(
            sa.and_(_C.dataset_uuid == dataset_uuid, _C.commit_id == commit_id),
            _C.run_uuid.in_(producer.scalar_subquery()),
        )
    )
    return [_stored(r) for r in conn.execute(q.order_by(_C.id)).all()]


def failed_runs_since(
    conn: Connection, dataset_uuid: str, job: str | None, after: datetime
) -> list[StoredResult]:
    """Results recorded after ``after`` by runs that committed nothing to the dataset:
    its own (an output check, ``commit_id`` null) and, for ``job`` (the transform that
    writes it), those of its runs that did not write it (their input checks)."""
    built = sa.select(_V.run_uuid).where(_V.dataset_uuid == dataset_uuid, _V.run_uuid.is_not(None))
    mine = sa.and_(_C.dataset_uuid == dataset_uuid, _C.commit_id.is_(None))
    if job is not None:
        theirs = sa.and_(_C.job == job, _C.run_uuid.not_in(built.scalar_subquery()))
        mine = sa.or_(mine, theirs)
    q = _select().where(_C.recorded_at > after, mine)
    return [_stored(r) for r in conn.execute(q.order_by(_C.id)).all()]


def of_run(conn: Connection, run: str) -> list[StoredResult]:
    q = _select().where(_C.run_uuid == run)
    return [_stored(r) for r in conn.execute(q.order_by(_C.id)).all()]


def last_failures(conn: Connection, jobs: Collection[str]) -> dict[str, list[StoredResult]]:
    """Per transform, the failed (FAIL) results of its latest run that had any."""
    latest: dict[str, int] = {}
    for batch in chunks(sorted(jobs)):
        q = (
            sa.select(_C.job, sa.func.max(_C.id))
            .where(_C.job.in_(batch), _C.outcome == "failed")
            .group_by(_C.job)
        )
        latest.update({str(r[0]): int(r[1]) for r in conn.execute(q).all()})
    if not latest:
        return {}
    q = sa.select(_C.id, _C.run_uuid).where(_C.id.in_(list(latest.values())))
    runs: dict[int, str] = {int(r[0]): str(r[1]) for r in conn.execute(q).all()}
    out: dict[str, list[StoredResult]] = {}
    for batch in chunks(sorted(set(runs.values()))):
        q = _select().where(_C.run_uuid.in_(batch), _C.outcome == "failed").order_by(_C.id)
        for r in conn.execute(q).all():
            out.setdefault(r.job, []).append(_stored(r))
    return out


def warned_versions(conn: Connection, dataset_uuid: str) -> dict[int, list[str]]:
    """``commit_id -> check names`` of the dataset's versions committed with a warning."""
    q = (
        sa.select(_C.commit_id, _C.name)
        .where(
            _C.dataset_uuid == dataset_uuid,
            _C.side == "output",
            _C.outcome == "warned",
            _C.commit_id.is_not(None),
        )
        .order_by(_C.id)
    )
    out: dict[int, list[str]] = {}
    for r in conn.execute(q).all():
        names = out.setdefault(int(r[0]), [])
        if r[1] not in names:
            names.append(str(r[1]))
    return out


def committed_at(conn: Connection, dataset_uuid: str, commit_id: int) -> datetime | None:
    q = sa.select(_V.created_at).where(_V.dataset_uuid == dataset_uuid, _V.commit_id == commit_id)
    return conn.execute(q).scalar_one_or_none()
