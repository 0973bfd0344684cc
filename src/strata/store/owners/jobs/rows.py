"""The owner of ``jobs``: each job's row, its merged facets and fold state, its name
under its parent and its current version.

The fold creates or widens jobs (:func:`touch`), stores what it merged
(:func:`write_states`, :func:`write_fold_state`), renames and re-parents them
(:func:`write_names`, :func:`free_name`) and moves their current versions
(:func:`set_current_versions`); the API hides them (:func:`hide`, :func:`hide_namespace`).
Reads of jobs alone are typed functions; a statement that joins jobs to another family
selects from :func:`relation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.sql.selectable import NamedFromClause

from strata.store.bulk import cached, returning_many, update_rows, widening_upsert
from strata.store.schema import jobs

_J = jobs


def relation(name: str = "jobs") -> NamedFromClause:
    """The jobs under ``name``, to read in a statement that joins them to another
    family's tables (an alias: it can be selected from, not written)."""
    return _J.alias(name)


@dataclass
class JobRow:
    """A job's merge state, read back by the upsert that touched it."""

    uuid: str
    facets: dict[str, Any]
    fold_state: dict[str, Any]
    current_version: str | None = None


# --- writes -----------------------------------------------------------------------------


def touch(conn: Connection, rows: Sequence[dict[str, Any]]) -> dict[str, JobRow]:
    """Create (as ``rows`` give them) or widen jobs to cover each row's ``created_at`` and
    ``updated_at``, and read them back in one statement: uuid -> its merge state."""
    if not rows:
        return {}
    stmt = widening_upsert(
        conn,
        _J,
        list(rows[0]),
        ["uuid"],
        ["uuid", "facets", "fold_state", "current_version_uuid"],
    )
    out = {}
    for row in returning_many(conn, stmt, list(rows)):
        current = str(row.current_version_uuid) if row.current_version_uuid else None
        out[str(row.uuid)] = JobRow(str(row.uuid), row.facets or {}, row.fold_state or {}, current)
    return out


def write_states(conn: Connection, rows: Sequence[JobRow]) -> None:
    """Store the merged facets and fold state of ``rows``."""
    update_rows(
        conn,
        _J,
        "uuid",
        [{"uuid": r.uuid, "facets": r.facets, "fold_state": r.fold_state} for r in rows],
    )


def write_fold_state(conn: Connection, job_uuid: str, state: dict[str, Any]) -> None:
    conn.execute(_J.update().where(_J.c.uuid == job_uuid).values(fold_state=state))


@dataclass(frozen=True)
class Naming:
    """What a job's name and facets derive: its names, parent and facet columns."""

    simple_name: str
    name: str
    parent_job_uuid: str | None
    parent_key: str
    type: str | None
    description: str | None
    location: str | None


def write_names(conn: Connection, job_uuid: str, naming: Naming) -> None:
    conn.execute(_J.update().where(_J.c.uuid == job_uuid).values(**naming.__dict__))


def free_name(conn: Connection, job_uuid: str) -> None:
    """Move the job out of the way of its simple name under its parent (its own uuid as
    its parent key), until its refresh names it for good."""
    conn.execute(_J.update().where(_J.c.uuid == job_uuid).values(parent_key=job_uuid))


def set_current_versions(conn: Connection, writes: Sequence[dict[str, Any]]) -> None:
    """Set each ``{"uuid", "current_version_uuid"}``."""
    update_rows(conn, _J, "uuid", list(writes))


def hide(conn: Connection, job_uuid: str) -> None:
    conn.execute(_J.update().where(_J.c.uuid == job_uuid).values(is_hidden=True))


def hide_namespace(conn: Connection, namespace: str) -> None:
    conn.execute(
        _J.update()
        .where(_J.c.namespace == namespace, _J.c.is_hidden.is_(False))
        .values(is_hidden=True)
    )


# --- reads ------------------------------------------------------------------------------


def state(conn: Connection, job_uuid: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The job's merged facets and fold state."""
    row = conn.execute(
        cached(
            ("job-state",),
            lambda: sa.select(_J.c.facets, _J.c.fold_state).where(_J.c.uuid == sa.bindparam("u")),
        ),
        {"u": job_uuid},
    ).one()
    return dict(row.facets or {}), dict(row.fold_state or {})


def row(conn: Connection, job_uuid: str) -> Any:
    """The job's whole row."""
    return conn.execute(sa.select(_J).where(_J.c.uuid == job_uuid)).one()


def parent_of(conn: Connection, job_uuid: str) -> str | None:
    found = conn.execute(sa.select(_J.c.parent_job_uuid).where(_J.c.uuid == job_uuid)).scalar()
    return str(found) if found is not None else None


def raw_name(row: Any) -> str:
    """The name a job's events use (a row with ``fold_state`` and ``name``)."""
    return str((row.fold_state or {}).get("raw") or row.name)


def name_and_raw(conn: Connection, job_uuid: str) -> tuple[str, str]:
    """The job's stored (full) name and the name its events use."""
    found = conn.execute(sa.select(_J.c.name, _J.c.fold_state).where(_J.c.uuid == job_uuid)).one()
    return str(found.name), raw_name(found)


@dataclass(frozen=True)
class Holder:
    """A job holding a simple name under a parent, and the name its events use."""

    uuid: str
    raw: str


def holder(
    conn: Connection, namespace: str, simple: str, parent_key: str, job_uuid: str
) -> Holder | None:
    """The other job that has ``simple`` under ``parent_key``, if any."""
    found = conn.execute(
        sa.select(_J.c.uuid, _J.c.name, _J.c.fold_state).where(
            _J.c.namespace == namespace,
            _J.c.simple_name == simple,
            _J.c.parent_key == parent_key,
            _J.c.uuid != job_uuid,
        )
    ).first()
    return None if found is None else Holder(str(found.uuid), raw_name(found))


def yielded(conn: Connection, namespace: str, parent: str, job_uuid: str) -> list[str]:
    """Jobs under ``parent`` that kept their raw names because another job outranked them."""
    found: sa.CursorResult[Any] = conn.execute(
        sa.select(_J.c.uuid).where(
            _J.c.namespace == namespace,
            _J.c.parent_job_uuid == parent,
            _J.c.parent_key == sa.cast(_J.c.uuid, _J.c.parent_key.type),
            _J.c.uuid != job_uuid,
        )
    )
    return sorted(str(u) for u in found.scalars().all())


def children(conn: Connection, job_uuid: str) -> list[str]:
    found = conn.execute(sa.select(_J.c.uuid).where(_J.c.parent_job_uuid == job_uuid))
    return [str(r.uuid) for r in found]
