"""Create-on-demand rows (namespaces, sources, datasets) and latest-wins facet merges.

Creation and update times are the earliest and latest event times that
touched a row, and merged facets remember the ``[time, hash]`` stamp of the
event they came from, so every write here commutes with every other.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from strata.lineage import facets as fx
from strata.lineage import keys
from strata.store import schema as s


def insert_ignore(
    conn: Connection, table: sa.Table, values: dict[str, Any], index: Sequence[str]
) -> bool:
    """Insert unless a row with the same ``index`` columns exists; True if inserted."""
    dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = (
        dialect.insert(table)
        .values(values)
        .on_conflict_do_nothing(index_elements=list(index))
        .returning(table.c[index[0]])
    )
    # rowcount is not reliable for ON CONFLICT DO NOTHING on every driver; RETURNING is.
    return conn.execute(stmt).first() is not None


def widen_times(conn: Connection, table: sa.Table, where: Any, at: datetime) -> None:
    """Stretch ``created_at``/``updated_at`` of one row to cover ``at``."""
    row = conn.execute(sa.select(table.c.created_at, table.c.updated_at).where(where)).first()
    if row is None:
        return
    values: dict[str, datetime] = {}
    if at < row.created_at:
        values["created_at"] = at
    if at > row.updated_at:
        values["updated_at"] = at
    if values:
        conn.execute(table.update().where(where).values(**values))


def touch_namespace(conn: Connection, name: str, at: datetime) -> None:
    t = s.namespaces
    values = {"name": name, "owner": "anonymous", "created_at": at, "updated_at": at}
    if not insert_ignore(conn, t, values, ["name"]):
        widen_times(conn, t, t.c.name == name, at)


def touch_source(conn: Connection, name: str, uri: str | None, at: datetime) -> None:
    """Create or widen a source; its URL is the one of the latest event (ties: largest URL)."""
    t = s.sources
    values = {
        "name": name,
        "type": _source_type(uri),
        "connection_url": uri,
        "created_at": at,
        "updated_at": at,
    }
    if insert_ignore(conn, t, values, ["name"]):
        return
    row = conn.execute(sa.select(t).where(t.c.name == name)).one()
    widen_times(conn, t, t.c.name == name, at)
    if uri is None or uri == row.connection_url:
        return
    if at > row.updated_at or (at == row.updated_at and uri > (row.connection_url or "")):
        conn.execute(
            t.update().where(t.c.name == name).values(connection_url=uri, type=_source_type(uri))
        )


def _source_type(uri: str | None) -> str:
    return (uri.split(":", 1)[0].upper() if uri and ":" in uri else "") or "DB"


def touch_dataset(conn: Connection, namespace: str, name: str, at: datetime) -> str:
    """The dataset's uuid, creating the namespace and dataset rows when new."""
    touch_namespace(conn, namespace, at)
    t = s.datasets
    uuid = keys.dataset_uuid(namespace, name)
    row = conn.execute(sa.select(t.c.uuid).where(t.c.namespace == namespace, t.c.name == name))
    existing = row.scalar_one_or_none()
    if existing is not None:
        widen_times(conn, t, t.c.uuid == existing, at)
        return str(existing)
    conn.execute(
        t.insert().values(
            uuid=uuid,
            namespace=namespace,
            name=name,
            physical_name=name,
            facets={},
            fold_state={"facets": {}},
            created_at=at,
            updated_at=at,
        )
    )
    return uuid


def merge_stamped(
    current: dict[str, Any], stamps: dict[str, Any], new: dict[str, Any], stamp: list[str]
) -> bool:
    """Merge ``new`` facets into ``current`` where ``stamp`` is later; True if changed.

    A stamp names one event, so equal stamps carry equal values.
    """
    changed = False
    for key, value in new.items():
        old = stamps.get(key)
        if old is None or list(old) < stamp:
            current[key] = value
            stamps[key] = stamp
            changed = True
    return changed


def merge_dataset_facets(
    conn: Connection, dataset_uuid: str, new: dict[str, Any], stamp: list[str]
) -> None:
    if not new:
        return
    t = s.datasets
    row = conn.execute(sa.select(t.c.facets, t.c.fold_state).where(t.c.uuid == dataset_uuid)).one()
    current = dict(row.facets or {})
    state = dict(row.fold_state or {})
    stamps = dict(state.get("facets") or {})
    if merge_stamped(current, stamps, new, stamp):
        state["facets"] = stamps
        conn.execute(
            t.update().where(t.c.uuid == dataset_uuid).values(facets=current, fold_state=state)
        )


def refresh_dataset(conn: Connection, dataset_uuid: str) -> None:
    """Columns derived from the dataset's merged facets: description, source, symlinks."""
    t = s.datasets
    row = conn.execute(sa.select(t.c.facets, t.c.is_lake).where(t.c.uuid == dataset_uuid)).one()
    merged: dict[str, Any] = row.facets or {}
    values: dict[str, Any] = {}
    desc = fx.description(merged)
    if desc is not None:
        values["description"] = desc
    source = fx.data_source(merged)
    if source is not None:
        values["source_name"] = source[0]
    if values:
        conn.execute(t.update().where(t.c.uuid == dataset_uuid).values(**values))
    links = fx.symlinks(merged)
    sl = s.dataset_symlinks
    conn.execute(sl.delete().where(sl.c.dataset_uuid == dataset_uuid))
    if links:
        conn.execute(
            sl.insert(),
            [
                {"dataset_uuid": dataset_uuid, "namespace": ns, "name": name, "type": kind}
                for ns, name, kind in links
            ],
        )
