"""The pending-event journal of a SQLite store: a file of its own beside the store.

SQLite has one writer per file, so the lineage writer queues acknowledged events in
``meta.pending.db`` beside ``meta.db`` and the fold's long transactions never hold
storing back. The file holds one table, ``lineage_pending``, in the layout the store's
migrations give that table; the migrations cannot reach the file, so opening it brings
it to today's layout here: a missing table is created, one of an older layout has its
rows copied into today's (column by column, as Alembic's batch mode would), and one
whose rows cannot be carried (a column today's layout needs is missing) is refused,
naming the file, since its events were acknowledged and must not be dropped.
"""

from __future__ import annotations

import functools
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from strata.errors import StoreError
from strata.store import schema as s
from strata.store.engine import create_engine, write_tx

SUFFIX = ".pending.db"

# (name, declared type, not null, part of the primary key) per column, in order.
Layout = tuple[tuple[str, str, int, int], ...]


def journal_for(engine: Engine) -> Engine:
    """Where the writer queues acknowledged events: the store itself, or for a SQLite
    file ``meta.db`` the file ``meta.pending.db`` beside it, in today's layout."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return engine
    path = Path(database)
    file = path.with_name(path.stem + SUFFIX)
    journal = create_engine(f"sqlite:///{file}")
    with write_tx(journal) as conn:  # the server and its fold process may open it at once
        _bring_to_layout(conn, file)
    return journal


def _bring_to_layout(conn: Connection, path: Path) -> None:
    table = s.lineage_pending
    found = _layout(conn, table.name)
    if not found:
        table.create(conn)
        return
    if found == _today():
        return
    kept = [c[0] for c in found if c[0] in table.c]
    required = [c.name for c in table.c if not c.nullable and c.server_default is None]
    missing = [name for name in required if name not in kept and name != "seq"]
    count = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
    if missing and count:
        raise StoreError(
            f"the pending-event journal {path} holds {count} acknowledged event(s) in a "
            f"layout without column(s) {', '.join(missing)}; start the Strata version that "
            "wrote them once so it folds them, then start this one",
            journal=str(path),
        )
    old = f"{table.name}_before"
    conn.exec_driver_sql(f'ALTER TABLE "{table.name}" RENAME TO "{old}"')
    for index in _index_names(conn, old):  # their names would clash with today's
        conn.exec_driver_sql(f'DROP INDEX "{index}"')
    table.create(conn)
    if count:
        columns = ", ".join(f'"{name}"' for name in kept)
        conn.exec_driver_sql(
            f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} FROM "{old}" ORDER BY seq'
        )
    conn.exec_driver_sql(f'DROP TABLE "{old}"')


def _layout(conn: Connection, table: str) -> Layout:
    rows = conn.exec_driver_sql(f'PRAGMA table_info("{table}")').all()
    return tuple((r.name, str(r.type).upper(), int(r.notnull), int(r.pk)) for r in rows)


def _index_names(conn: Connection, table: str) -> list[str]:
    rows = conn.exec_driver_sql(f'PRAGMA index_list("{table}")').all()
    return [r.name for r in rows if r.origin == "c"]  # sqlite_autoindex_* go with the table


@functools.cache
def _today() -> Layout:
    """The layout today's schema gives the table in a SQLite file."""
    engine = sa.create_engine("sqlite://")
    with engine.begin() as conn:
        s.lineage_pending.create(conn)
        return _layout(conn, s.lineage_pending.name)
