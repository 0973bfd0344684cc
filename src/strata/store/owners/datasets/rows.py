"""The owner of ``datasets``: each dataset's row, its merged facets and fold state, the
columns they derive, whether the lake stores it, how it is partitioned, and its current
version.

The fold creates or widens datasets (:func:`touch`), stores what it merged
(:func:`write_facets`, :func:`update`) and moves current versions (:func:`set_current`);
the lake makes its datasets (:func:`ensure_lake`), changes their partitioning
(:func:`set_partition_by`), holds them against other commits (:func:`lock`) and moves
the current version in the commit's own statement (:func:`move_current`); the API
describes and hides them (:func:`describe`, :func:`hide`, :func:`hide_namespace`). Every
read selects from :func:`relation`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import (
    cached,
    chunks,
    execute_many,
    insert_ignore,
    one_of,
    returning_many,
    update_rows,
    widening_upsert,
)
from strata.store.schema import datasets

_T = datasets
_D = datasets.c


def relation(name: str = "datasets") -> NamedFromClause:
    """The datasets under ``name``, read-only, to select from or join."""
    return _T.alias(name)


@dataclass
class DatasetRow:
    """What the fold needs of a dataset row, read back by the upsert that touched it."""

    uuid: str
    is_lake: bool
    facets: dict[str, Any]
    fold_state: dict[str, Any]


# --- the fold ---------------------------------------------------------------------------


def touch(conn: Connection, rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str], DatasetRow]:
    """Create (as ``rows`` give them) or widen datasets to cover each row's times, and
    read them back in one statement: (namespace, name) -> its merge state."""
    if not rows:
        return {}
    stmt = widening_upsert(
        conn,
        _T,
        list(rows[0]),
        ["namespace", "name"],
        ["namespace", "name", "uuid", "is_lake", "facets", "fold_state"],
    )
    return {
        (r.namespace, r.name): DatasetRow(
            str(r.uuid), bool(r.is_lake), r.facets or {}, r.fold_state or {}
        )
        for r in returning_many(conn, stmt, list(rows))
    }


def write_facets(
    conn: Connection, rows: Sequence[DatasetRow], values_changed: Collection[str]
) -> None:
    """Store the merged stamps of ``rows``, and the facets of those in ``values_changed``
    (a later event that repeats the stored values moves only the stamps, and facets
    such as a schema are large)."""
    with_facets = [
        {"uuid": r.uuid, "facets": r.facets, "fold_state": r.fold_state}
        for r in rows
        if r.uuid in values_changed
    ]
    update_rows(conn, _T, "uuid", with_facets)
    stamps = [
        {"uuid": r.uuid, "fold_state": r.fold_state} for r in rows if r.uuid not in values_changed
    ]
    update_rows(conn, _T, "uuid", stamps)


def update(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Set the given columns of each row (all with the same columns), found by uuid."""
    update_rows(conn, _T, "uuid", list(rows))


def set_current(
    conn: Connection, uuids: Collection[str], pick: Callable[[Any], Any], key: str
) -> None:
    """Set each dataset's current version to ``pick(datasets)``, an expression over the
    row (the caller's correlated subqueries); ``key`` names the statement, built once."""
    dialect = conn.dialect.name

    def build() -> Any:
        where = one_of(dialect, _D.uuid, "keys")
        return _T.update().where(where).values(current_version_uuid=pick(_T))

    for chunk in chunks(sorted(set(uuids))):
        execute_many(conn, cached((key, dialect), build), [{"keys": chunk}])


# --- the lake ---------------------------------------------------------------------------


def ensure_lake(conn: Connection, row: Mapping[str, Any]) -> str:
    """The uuid of the dataset ``row`` names (namespace, name), now stored by the lake:
    a dataset known so far only from lineage events becomes a lake dataset; a new one is
    inserted as ``row`` gives it (a racing insert of the same name keeps the first)."""
    found = conn.execute(
        sa.select(_D.uuid, _D.is_lake).where(
            _D.namespace == row["namespace"], _D.name == row["name"]
        )
    ).first()
    if found is not None:
        if not found.is_lake:
            conn.execute(_T.update().where(_D.uuid == found.uuid).values(is_lake=True))
        return str(found.uuid)
    insert_ignore(conn, _T, dict(row), ["namespace", "name"])
    return str(row["uuid"])


def set_partition_by(conn: Connection, uuid: str, partition_by: list[str] | None) -> None:
    conn.execute(_T.update().where(_D.uuid == uuid).values(partition_by=partition_by))


def lock(conn: Connection, uuids: Sequence[str]) -> None:
    """Hold datasets ``uuids`` against commits (and retention) until the SQL transaction
    ends: row locks on PostgreSQL, in one order; SQLite's write lock already does."""
    if conn.dialect.name == "postgresql":
        q = sa.select(_D.uuid).where(_D.uuid.in_(sorted(uuids))).order_by(_D.uuid)
        conn.execute(q.with_for_update()).all()


def move_current(*, returning: bool = False) -> Any:
    """The update that makes a commit's version current, for the commit to run inside
    its own transaction: dataset ``ds_uuid``'s current version becomes ``v_uuid`` at
    ``now`` (bind parameters); ``returning`` the dataset's uuid, to run as a CTE."""
    p = sa.bindparam
    stmt = (
        _T.update()
        .where(_D.uuid == p("ds_uuid"))
        .values(current_version_uuid=p("v_uuid"), updated_at=p("now"))
    )
    return stmt.returning(_D.uuid) if returning else stmt


def make_current(conn: Connection, uuid: str, version_uuid: str, at: datetime) -> None:
    """A merge into main: dataset ``uuid``'s current version becomes ``version_uuid``."""
    conn.execute(
        _T.update().where(_D.uuid == uuid).values(current_version_uuid=version_uuid, updated_at=at)
    )


# --- the API ----------------------------------------------------------------------------


def describe(
    conn: Connection, namespace: str, name: str, type: str | None, physical_name: str
) -> None:
    conn.execute(
        _T.update()
        .where(_D.namespace == namespace, _D.name == name)
        .values(type=type, physical_name=physical_name)
    )


def hide(conn: Connection, uuid: str) -> None:
    conn.execute(_T.update().where(_D.uuid == uuid).values(is_hidden=True))


def hide_namespace(conn: Connection, namespace: str) -> None:
    conn.execute(
        _T.update().where(_D.namespace == namespace, _D.is_hidden.is_(False)).values(is_hidden=True)
    )
