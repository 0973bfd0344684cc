"""Namespaces, sources and tags (the last two read through their owners)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.errors import NotFound
from strata.lineage.query.common import Page, T
from strata.store import schema as s
from strata.store.owners import sources, tags
from strata.store.owners.sources import Source
from strata.store.owners.tags import Tag

# --- namespaces and sources -------------------------------------------------------------


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


def _by_name_page(
    conn: Connection, t: sa.Table, limit: int, offset: int, make: Callable[[sa.Row[Any]], T]
) -> Page[T]:
    """A page of a table keyed by ``name``, in name order, with its total."""
    rows = conn.execute(sa.select(t).order_by(t.c.name).limit(limit).offset(offset)).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
    return Page([make(r) for r in rows], total)


def _by_name(conn: Connection, t: sa.Table, name: str, what: str) -> sa.Row[Any]:
    row = conn.execute(sa.select(t).where(t.c.name == name)).first()
    if row is None:
        raise NotFound(f"{what} {name!r} not found", **{what: name})
    return row


def list_namespaces(conn: Connection, limit: int, offset: int) -> Page[Namespace]:
    return _by_name_page(conn, s.namespaces, limit, offset, _namespace)


def get_namespace(conn: Connection, name: str) -> Namespace:
    return _namespace(_by_name(conn, s.namespaces, name, "namespace"))


def list_sources(conn: Connection, limit: int, offset: int) -> Page[Source]:
    return Page(*sources.page(conn, limit, offset))


def get_source(conn: Connection, name: str) -> Source:
    found = sources.get(conn, name)
    if found is None:
        raise NotFound(f"source {name!r} not found", source=name)
    return found


# --- tags ---------------------------------------------------------------------------------


def list_tags(conn: Connection, limit: int, offset: int) -> Page[Tag]:
    return Page(*tags.page(conn, limit, offset))


def get_tag(conn: Connection, name: str) -> Tag:
    found = tags.get(conn, name)
    if found is None:
        raise NotFound(f"tag {name!r} not found", tag=name)
    return found
