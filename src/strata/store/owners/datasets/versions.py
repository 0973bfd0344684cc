"""The owner of ``dataset_versions``: every version of every dataset, whether a lake
commit (with its commit id), a run's output the fold recorded, a version events declared,
or a synthetic version standing for what a run read of a dataset nothing recorded.

The lake's commit inserts its version in the commit's own statement (:func:`insert`);
the fold upserts outputs and declared versions (:func:`upsert`), adds synthetic ones
(:func:`add_missing`), names a lake commit's producer (:func:`set_producer`), dates and
drops synthetic ones (:func:`update`, :func:`delete`); lineage retention deletes or
unlinks a pruned run's (:func:`delete`, :func:`unlink`); retention marks purged commits
(:func:`mark_purged`). Every read selects from :func:`relation`, one alias per reading
module or statement.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import chunks, delete_in, execute_many, insert_ignore_many, update_rows
from strata.store.bulk import upsert as upsert_statement
from strata.store.schema import dataset_versions

_T = dataset_versions
_V = dataset_versions.c


def relation(name: str = "dataset_versions") -> NamedFromClause:
    """The versions under ``name``, read-only, to select from or join."""
    return _T.alias(name)


def is_synthetic(dv: sa.FromClause) -> Any:
    """A stand-in version (on ``dv``, this table or a relation of it): no run, no
    commit, not declared."""
    return sa.and_(dv.c.run_uuid.is_(None), dv.c.commit_id.is_(None), dv.c.declared.is_(False))


def insert(columns: Sequence[str], *, returning: bool = False) -> Any:
    """The insert of one version, for the commit to run in its own transaction: each of
    ``columns`` a bind parameter ``v_<column>``; ``returning`` the new row's uuid, to run
    as a CTE of the commit's one statement."""
    p = sa.bindparam
    stmt = _T.insert().values({c: p(f"v_{c}", type_=_V[c].type) for c in columns})
    return stmt.returning(_V.uuid) if returning else stmt


def upsert(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` (each with the same columns) whole, over any stored by uuid."""
    if rows:
        execute_many(conn, upsert_statement(conn, _T, list(rows[0]), ["uuid"]), list(rows))


def add_missing(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` not stored yet (by uuid); those stored stay as they are."""
    insert_ignore_many(conn, _T, list(rows), ["uuid"])


def set_producer(conn: Connection, uuid: str, run: str) -> None:
    """Name ``run`` as the run that wrote version ``uuid``."""
    conn.execute(_T.update().where(_V.uuid == uuid).values(run_uuid=run))


def update(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Set the given columns of each row, found by ``uuid``."""
    update_rows(conn, _T, "uuid", list(rows))


def delete(conn: Connection, uuids: Collection[str]) -> None:
    delete_in(conn, _T, "uuid", list(uuids))


def unlink(conn: Connection, uuids: Collection[str]) -> None:
    """Forget the run that wrote these versions (it is gone); the versions stay."""
    for part in chunks(sorted(uuids), 500):
        conn.execute(_T.update().where(_V.uuid.in_(part)).values(run_uuid=None))


def mark_purged(
    conn: Connection, dataset_uuid: str, commit_ids: Collection[int], at: datetime, policy: str
) -> None:
    """Retention purged these commits of the dataset under ``policy``."""
    for part in chunks(sorted(commit_ids), 500):
        conn.execute(
            _T.update()
            .where(_V.dataset_uuid == dataset_uuid, _V.commit_id.in_(part))
            .values(purged_at=at, purged_by=policy)
        )


def branch_of(conn: Connection, uuid: str) -> str:
    """The id of the branch version ``uuid`` belongs to."""
    return str(conn.execute(sa.select(_V.branch_id).where(_V.uuid == uuid)).scalar_one())


def move_to_branch(conn: Connection, uuid: str, branch_id: str, at: datetime) -> None:
    """A fast-forward merge: version ``uuid`` now belongs to ``branch_id``, from ``at``."""
    conn.execute(_T.update().where(_V.uuid == uuid).values(branch_id=branch_id, merged_at=at))


def branch_at(dataset_uuid: str, commit_id: int) -> Any:
    """A scalar subquery: the id of the branch commit ``commit_id`` belongs to."""
    return (
        sa.select(_V.branch_id)
        .where(_V.dataset_uuid == dataset_uuid, _V.commit_id == commit_id)
        .scalar_subquery()
    )
