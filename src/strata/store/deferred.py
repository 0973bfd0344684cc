"""Writes the fold does not wait for: sent in psycopg's pipeline mode on PostgreSQL.

A fold runs some forty statements a group, one after the other, and most of them
write rows nobody reads until later in the same transaction. Waiting for each in turn
left the database idle while Python built the next statement, and Python idle while the
database wrote: the two took turns. Within :func:`deferred_writes`, the writes of
:func:`~strata.store.bulk.execute_many` are sent and not waited for;
PostgreSQL runs a connection's statements in the order sent, so a later read still sees
them. The first statement that needs a result (anything run through SQLAlchemy, which
reads results as it executes, or :func:`~strata.store.bulk.returning_many`)
waits for every write sent before it, and so does the end of the block. A write's error
is raised there, as the SQLAlchemy exception (``IntegrityError``…) it would have raised
when sent.

On SQLite the block changes nothing: every statement is waited for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

_KEY = "strata_deferred_writes"  # in Connection.info, while a block is open


@contextmanager
def driver_errors(conn: Connection, sql: str) -> Iterator[None]:
    """Driver errors raised as SQLAlchemy raises them (IntegrityError, OperationalError…),
    which is what callers catch."""
    dbapi_error = conn.dialect.loaded_dbapi.Error
    try:
        yield
    except dbapi_error as exc:
        raise sa.exc.DBAPIError.instance(sql, None, exc, dbapi_error) from exc


class _Pending:
    """The writes a block sent and did not wait for."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.pipeline: Any = None  # psycopg's, entered while writes are pending
        self.cursors: list[Any] = []
        # The statements sent since the last wait: an error surfaces at a later statement
        # or at the wait, so it names all of them, not the one that happened to be last.
        self.sql: dict[str, None] = {}

    def statements(self) -> str:
        return "; ".join(self.sql)

    def cursor(self, sql: str) -> Any:
        if self.pipeline is None:
            self.pipeline = self.raw.pipeline()
            self.pipeline.__enter__()
        cur = self.raw.cursor()
        self.cursors.append(cur)
        self.sql[sql] = None
        return cur

    def wait(self, conn: Connection) -> None:
        if self.pipeline is None:
            return
        pipeline, self.pipeline = self.pipeline, None
        cursors, self.cursors = self.cursors, []
        statements, self.sql = self.statements(), {}
        with driver_errors(conn, statements):
            try:
                pipeline.__exit__(None, None, None)
            finally:
                for cur in cursors:
                    cur.close()

    def abandon(self) -> None:
        """Leave pipeline mode after the block failed; its error is the one raised."""
        if self.pipeline is None:
            return
        pipeline, self.pipeline = self.pipeline, None
        self.cursors, self.sql = [], {}
        with contextlib.suppress(Exception):  # a write's error, after the block's own
            pipeline.__exit__(None, None, None)


@contextmanager
def deferred_writes(conn: Connection) -> Iterator[None]:
    """Within the block, writes sent with :func:`send` (as ``statements.execute_many`` sends
    them) are not waited for, on PostgreSQL; the block's end waits for them."""
    if conn.dialect.name != "postgresql" or _KEY in conn.info:
        yield
        return
    pending = _Pending(conn.connection.dbapi_connection)
    if not sa.event.contains(conn, "before_cursor_execute", _wait_before_execute):
        sa.event.listen(conn, "before_cursor_execute", _wait_before_execute)
    conn.info[_KEY] = pending
    try:
        yield
        pending.wait(conn)
    except BaseException:
        pending.abandon()
        raise
    finally:
        conn.info.pop(_KEY, None)


def send(conn: Connection, sql: str, run: Callable[[Any], None]) -> bool:
    """Inside :func:`deferred_writes` (PostgreSQL), ``run`` the write ``sql`` on a driver
    cursor and do not wait for it; False outside one, where the caller runs it."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is None:
        return False
    cur = pending.cursor(sql)
    with driver_errors(conn, pending.statements()):
        run(cur)
    return True


def wait(conn: Connection) -> None:
    """Wait for the writes sent so far (raising a write's error)."""
    pending: _Pending | None = conn.info.get(_KEY)
    if pending is not None:
        pending.wait(conn)


def _wait_before_execute(conn: Connection, *_: Any) -> None:
    wait(conn)
