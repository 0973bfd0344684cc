"""Data sources: the systems datasets live in, by name, with their connection URL.

The only module that reads or writes ``sources``. Producers name a dataset's source in
its ``dataSource`` facet; the fold creates the source on first sight and keeps the URL of
the latest event that names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import sources

_COLUMNS = (
    sources.c.name,
    sources.c.type,
    sources.c.connection_url,
    sources.c.description,
    sources.c.created_at,
    sources.c.updated_at,
)


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


# --- reads ------------------------------------------------------------------------------


def page(conn: Connection, limit: int, offset: int) -> tuple[list[Source], int]:
    """A page of sources in name order, and how many there are."""
    rows = conn.execute(
        sa.select(*_COLUMNS).order_by(sources.c.name).limit(limit).offset(offset)
    ).all()
    total = conn.execute(sa.select(sa.func.count()).select_from(sources)).scalar_one()
    return [_source(r) for r in rows], int(total)


def get(conn: Connection, name: str) -> Source | None:
    row = conn.execute(sa.select(*_COLUMNS).where(sources.c.name == name)).first()
    return _source(row) if row is not None else None


def counts_before(conn: Connection, ends: Sequence[datetime]) -> list[int]:
    """How many sources were created before each of ``ends``, in one pass."""
    return bulk.counts_created_before(conn, sources, ends)


# --- writes -----------------------------------------------------------------------------


def ensure(conn: Connection, name: str, type: str, connection_url: str, now: datetime) -> None:
    """Create the source ``name`` unless it exists."""
    values = {"name": name, "type": type, "connection_url": connection_url, "url_at": now}
    bulk.insert_ignore(conn, sources, {**values, "created_at": now, "updated_at": now}, ["name"])


def upsert(
    conn: Connection,
    name: str,
    type: str,
    connection_url: str | None,
    description: str | None,
    now: datetime,
) -> None:
    """Create the source ``name`` or set what it says of itself."""
    t = sources
    values = {
        "type": type,
        "connection_url": connection_url,
        "url_at": now if connection_url is not None else None,
        "description": description,
        "updated_at": now,
    }
    if not bulk.insert_ignore(conn, t, {"name": name, "created_at": now, **values}, ["name"]):
        conn.execute(t.update().where(t.c.name == name).values(**values))


def touch(conn: Connection, name: str, uri: str | None, at: datetime) -> None:
    """Create a source seen at ``at`` or widen its times to cover ``at``; its URL is the
    one of the latest event that names one (ties: the largest URL), whatever the order
    the events come in."""
    t = sources
    url_at = at if uri is not None else None
    values = {"name": name, "type": _type_of(uri), "connection_url": uri, "url_at": url_at}
    if bulk.insert_ignore(conn, t, {**values, "created_at": at, "updated_at": at}, ["name"]):
        return
    row = conn.execute(
        bulk.cached(("source",), lambda: sa.select(t).where(t.c.name == sa.bindparam("name"))),
        {"name": name},
    ).one()
    bulk.widen_times(conn, t, "name", name, at)
    if uri is None or not _later(at, uri, row.url_at, row.connection_url):
        return
    conn.execute(
        t.update().where(t.c.name == name).values(connection_url=uri, type=_type_of(uri), url_at=at)
    )


def _later(at: datetime, uri: str, kept_at: datetime | None, kept: str | None) -> bool:
    """Whether a URL said at ``at`` replaces the one kept (said at ``kept_at``)."""
    return kept_at is None or at > kept_at or (at == kept_at and uri > (kept or ""))


def _type_of(uri: str | None) -> str:
    return (uri.split(":", 1)[0].upper() if uri and ":" in uri else "") or "DB"
