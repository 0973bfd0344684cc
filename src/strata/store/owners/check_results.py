"""The owner of ``check_results``: what each data check of a build found, kept per run
and per dataset version. The build records and reads them; lineage retention deletes
those of the runs it prunes (:func:`delete_of_runs`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store.bulk import chunks
from strata.store.owners import partition_builds
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.schema import check_results

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

_C, _D, _V = check_results.c, _DATASETS.c, _VERSIONS.c


class Found(NamedTuple):
    """One stored result: the check, the dataset it judged (by name) and the run."""

    dataset: str
    run: str
    job: str
    commit_id: int | None
    side: str
    partition_key: str | None
    name: str
    expectation: str
    on_error: str
    outcome: str
    observed: dict[str, Any]
    failing: int | None
    samples: list[Any]
    recorded_at: datetime


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


def insert(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Keep ``rows``, each a mapping of the table's columns."""
    if rows:
        conn.execute(check_results.insert(), list(rows))


def delete_of_runs(conn: Connection, runs: Collection[str]) -> None:
    conn.execute(check_results.delete().where(_C.run_uuid.in_(list(runs))))


def _found(conn: Connection, *wheres: Any) -> list[Found]:
    """The results meeting any of ``wheres`` (each met by different rows), in the order
    they were recorded."""
    rows: list[Any] = []
    for where in wheres:
        q = (
            sa.select(_C.id, *_COLUMNS)
            .select_from(check_results.join(_DATASETS, _D.uuid == _C.dataset_uuid))
            .where(where)
        )
        rows += conn.execute(q).all()
    rows.sort(key=lambda r: r[0])
    return [Found._make(r[1:]) for r in rows]


def of_version(conn: Connection, dataset_uuid: str, commit_id: int) -> list[Found]:
    """Every result that judged ``commit_id`` of the dataset (as an input or an output),
    and those of the runs that built it (their preconditions on their inputs): the run
    it names, and of a version of partitions each partition's run."""
    q = sa.select(_V.run_uuid, _V.partitions).where(
        _V.dataset_uuid == dataset_uuid, _V.commit_id == commit_id
    )
    found = conn.execute(q).one_or_none()
    named, summary = (found[0], found[1] or {}) if found is not None else (None, {})
    judged = sa.and_(_C.dataset_uuid == dataset_uuid, _C.commit_id == commit_id)
    runs = sorted({named, *(summary.get("runs") or {}).values()} - {None})
    return _found(
        conn,
        judged,
        *[sa.and_(_C.run_uuid.in_(batch), sa.not_(judged)) for batch in chunks(runs)],
    )


def failed_runs_since(
    conn: Connection, dataset_uuid: str, job: str | None, after: datetime
) -> list[Found]:
    """Results recorded after ``after`` by runs that committed nothing to the dataset:
    its own (an output check, ``commit_id`` null) and, for ``job`` (the transform that
    writes it), those of its runs that did not write it (their input checks)."""
    versions = sa.select(_V.run_uuid).where(
        _V.dataset_uuid == dataset_uuid, _V.run_uuid.is_not(None)
    )
    # A version of partitions names one of their runs; each partition's own is its builder.
    built = versions.union(partition_builds.builders(dataset_uuid))
    mine = sa.and_(_C.dataset_uuid == dataset_uuid, _C.commit_id.is_(None))
    if job is not None:
        theirs = sa.and_(_C.job == job, _C.run_uuid.not_in(built.scalar_subquery()))
        mine = sa.or_(mine, theirs)
    return _found(conn, sa.and_(_C.recorded_at > after, mine))


def of_run(conn: Connection, run: str) -> list[Found]:
    return _found(conn, _C.run_uuid == run)


def last_failures(conn: Connection, jobs: Collection[str]) -> dict[str, list[Found]]:
    """Per transform, the failed (FAIL) results of its latest run that had any; of a
    partitioned one, of each partition's latest such run (each partition is its own run)."""
    latest: list[int] = []
    for batch in chunks(sorted(jobs)):
        q = (
            sa.select(sa.func.max(_C.id))
            .where(_C.job.in_(batch), _C.outcome == "failed")
            .group_by(_C.job, _C.partition_key)
        )
        latest += [int(r[0]) for r in conn.execute(q).all()]
    if not latest:
        return {}
    runs: set[str] = set()
    for ids in chunks(sorted(latest)):
        q = sa.select(_C.run_uuid).where(_C.id.in_(ids))
        runs.update(str(r[0]) for r in conn.execute(q).all())
    out: dict[str, list[Found]] = {}
    for batch in chunks(sorted(runs)):
        for found in _found(conn, sa.and_(_C.run_uuid.in_(batch), _C.outcome == "failed")):
            out.setdefault(found.job, []).append(found)
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
