"""Namespaces, sources and tags."""

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


@dataclass(frozen=True)
class Source:
    name: str
    type: str
    connection_url: str | None
    description: str | None
    created_at: datetime
    updated_at: datetime


def _source(row: sa.Row[Any]) -> Source:
    return Source(
        row.name, row.type, row.connection_url, row.description, row.created_at, row.updated_at
    )


def list_sources(conn: Connection, limit: int, offset: int) -> Page[Source]:
    return _by_name_page(conn, s.sources, limit, offset, _source)


def get_source(conn: Connection, name: str) -> Source:
    return _source(_by_name(conn, s.sources, name, "source"))


# --- tags ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tag:
    name: str
    description: str | None


def _tag(row: sa.Row[Any]) -> Tag:
    return Tag(row.name, row.description)


def list_tags(conn: Connection, limit: int, offset: int) -> Page[Tag]:
    return _by_name_page(conn, s.tags, limit, offset, _tag)


def get_tag(conn: Connection, name: str) -> Tag:
    return _tag(_by_name(conn, s.tags, name, "tag"))
