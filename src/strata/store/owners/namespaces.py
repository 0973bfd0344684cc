"""Namespaces: the names jobs and datasets live under, made on first use.

The only module that reads or writes ``namespaces``. The fold makes a namespace when an
event first names it and widens its times to cover every event that does; the lake
makes its own on its first transaction; Marquez's PUT describes one; hiding one is a
soft delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import namespaces

_N = namespaces
#: The owner of a namespace nobody described, as Marquez names it.
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Namespace:
    name: str
    owner: str | None
    description: str | None
    is_hidden: bool
    created_at: datetime
    updated_at: datetime


def _namespace(row: sa.Row[Any]) -> Namespace:
    return Namespace(
        row.name, row.owner, row.description, bool(row.is_hidden), row.created_at, row.updated_at
    )


# --- reads ------------------------------------------------------------------------------


def page(conn: Connection, limit: int, offset: int) -> tuple[list[Namespace], int]:
    """A page of namespaces (hidden ones included) in name order, and how many there are."""
    rows = conn.execute(sa.select(_N).order_by(_N.c.name).limit(limit).offset(offset)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(_N)).scalar_one()
    return [_namespace(r) for r in rows], int(total)


def get(conn: Connection, name: str) -> Namespace | None:
    row = conn.execute(sa.select(_N).where(_N.c.name == name)).first()
    return _namespace(row) if row is not None else None


# --- writes -----------------------------------------------------------------------------


def ensure(
    conn: Connection,
    name: str,
    now: datetime,
    owner: str | None = None,
    description: str | None = None,
) -> None:
    """Create the namespace ``name`` unless it exists (an existing one is left as it is)."""
    row = {"name": name, "owner": owner, "description": description}
    bulk.insert_ignore(conn, _N, {**row, "created_at": now, "updated_at": now}, ["name"])


def upsert(
    conn: Connection, name: str, owner: str | None, description: str | None, now: datetime
) -> None:
    """Create the namespace ``name`` or set what it says of itself (no owner: anonymous)."""
    values = {"owner": owner or ANONYMOUS, "description": description, "updated_at": now}
    if not bulk.insert_ignore(conn, _N, {"name": name, "created_at": now, **values}, ["name"]):
        conn.execute(_N.update().where(_N.c.name == name).values(**values))


def touch(conn: Connection, spans: Mapping[str, tuple[datetime, datetime]]) -> None:
    """Create or widen namespaces, each to cover its ``(earliest, latest)`` times (one
    statement for all of them)."""
    if not spans:
        return
    rows = [
        {"name": n, "owner": ANONYMOUS, "created_at": lo, "updated_at": hi}
        for n, (lo, hi) in sorted(spans.items())
    ]
    bulk.execute_many(conn, bulk.widening_upsert(conn, _N, list(rows[0]), ["name"], ()), rows)


def hide(conn: Connection, name: str) -> None:
    """Hide the namespace ``name`` (what it holds is hidden by its own owners)."""
    conn.execute(_N.update().where(_N.c.name == name).values(is_hidden=True))
