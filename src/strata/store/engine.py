"""Engine set-up for the metadata store: SQLite (WAL) or PostgreSQL."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url

from strata.errors import ConfigError
from strata.settings import Settings
from strata.store import jsoncodec
from strata.store.errors import mapped


def normalise_url(url: str) -> URL:
    """Parse a database URL; ``postgresql://`` means psycopg 3."""
    try:
        parsed = make_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConfigError(
            f"database URL {url!r} is not a URL; use sqlite:///path/meta.db or "
            "postgresql://user@host:5432/db"
        ) from exc
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"database URL {url!r} names backend {parsed.get_backend_name()!r}; "
            "Strata supports sqlite and postgresql"
        )
    return parsed


def create_engine(url: str, *, sqlite_cache_mb: int = 0, **kwargs: Any) -> Engine:
    """An engine with the pragmas and transaction handling Strata relies on.

    ``sqlite_cache_mb``: each SQLite connection's page cache, if not SQLite's default
    (2 MB); a connection keeps its pages only while no other connection writes the file,
    so a long-lived writer gains from a large one.
    """
    parsed = normalise_url(url)
    kwargs.setdefault("json_serializer", jsoncodec.dumps)
    kwargs.setdefault("json_deserializer", jsoncodec.loads)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed, sqlite_cache_mb, **kwargs)
    # psycopg prepares a statement after five runs; PostgreSQL (plan_cache_mode = auto)
    # then reuses a generic plan once it costs no more than the plans made for the
    # values, which saves re-planning every run. Statements must be written so that their
    # generic plan is right for every value (see lake/registry.py resolve_version); a
    # transaction that cannot promise that sets plan_cache_mode itself with SET LOCAL.
    if "poolclass" not in kwargs:  # NullPool and friends take no size arguments
        kwargs.setdefault("pool_size", 8)
        kwargs.setdefault("max_overflow", 8)
    engine = sa.create_engine(parsed, **kwargs)
    _ping_when_idle(engine)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Imported here: it imports psycopg, which a SQLite store never loads.
        from strata.store.arrays import use_fast_arrays

        use_fast_arrays(dbapi_conn)

    return engine


# A pooled connection unused for this long is checked before use.
_PING_IDLE_S = 5.0


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection that sat unused for :data:`_PING_IDLE_S` before handing it
    out, and replace it if the server dropped it (a restart, an idle timeout).

    SQLAlchemy's ``pool_pre_ping`` checks every checkout: a round trip before every
    transaction, a tenth of the server's ingest time under load, for connections used a
    moment ago. One used within the last seconds is taken as alive; if it is not after
    all, that one transaction fails and the pool drops the connection.
    """

    @sa.event.listens_for(engine, "checkin")
    def _checkin(_dbapi_conn: Any, record: Any) -> None:
        record.info["strata_used_at"] = time.monotonic()

    @sa.event.listens_for(engine, "checkout")
    def _checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        used_at = record.info.get("strata_used_at")
        if used_at is None or time.monotonic() - used_at < _PING_IDLE_S:
            return  # just opened, or just used
        try:
            engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise sa.exc.DisconnectionError(f"pooled connection lost: {exc}") from exc


def engine_for(settings: Settings) -> Engine:
    return create_engine(settings.database_url)


def _sqlite_engine(url: URL, cache_mb: int, **kwargs: Any) -> Engine:
    if url.database and url.database != ":memory:":
        try:
            Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the folder for SQLite database {url.database!r}: {exc}; "
                "set STRATA_HOME or STRATA_DATABASE_URL to a writable place"
            ) from exc
    kwargs.setdefault("connect_args", {"timeout": 60, "check_same_thread": False})
    if "poolclass" not in kwargs and url.database and url.database != ":memory:":
        # Enough pooled connections for a server's concurrent reads: a connection beyond
        # the pool is closed after use, and every new one runs the pragmas of _on_connect.
        kwargs.setdefault("pool_size", 16)
        kwargs.setdefault("max_overflow", 16)
    engine = sa.create_engine(url, **kwargs)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Take over BEGIN from pysqlite so writers can ask for IMMEDIATE locks.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA busy_timeout=60000")
        _use_wal(cur)
        cur.execute("PRAGMA synchronous=NORMAL")
        # Copy the WAL back into the database every 10,000 pages (40 MB) rather than
        # SQLite's 1,000: a lineage fold of a few hundred events writes about that much,
        # so nearly every fold's commit paid for a checkpoint (two fsyncs and the copy);
        # a page written by several folds in between is copied once.
        cur.execute(f"PRAGMA wal_autocheckpoint={_WAL_PAGES}")
        cur.execute("PRAGMA foreign_keys=ON")
        if cache_mb:
            cur.execute(f"PRAGMA cache_size=-{cache_mb * 1024}")  # negative: in KiB
        cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that later writes can fail with SQLITE_BUSY at once
        # (busy_timeout does not apply to lock upgrades); writers lock up front.
        mode = conn.get_execution_options().get("sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


_WAL_PAGES = 10_000


def _use_wal(cur: Any) -> None:
    """Put the file in WAL mode. The mode belongs to the file, and switching needs a lock
    that another process opening the same new store may hold; the switch then answers
    "locked" without waiting, so it is retried until some process has switched it."""
    deadline = time.monotonic() + 60
    while str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
        try:
            cur.execute("PRAGMA journal_mode=WAL")
        except sqlite3.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


@contextmanager
def write_tx(engine: Engine) -> Iterator[Connection]:
    """A read-write SQL transaction; on SQLite it takes the write lock at BEGIN."""
    with mapped(), engine.connect() as raw:
        conn = raw.execution_options(sqlite_begin="IMMEDIATE")
        with conn.begin():
            yield conn


class StatementConnection:
    """A connection for writes of one statement each, which are atomic by themselves,
    kept by the one thread that writes them.

    On PostgreSQL each statement commits alone (autocommit): BEGIN and COMMIT around a
    one-statement write are two more round trips to the server, and for the server's
    lineage queue, whose writes under load hold one or two events each, they cost about
    as much CPU as the insert. The connection is kept between writes, since checking one
    out of the pool and in again cost each write as much Python as the write itself;
    after :data:`_PING_IDLE_S` unused it goes back to the pool, which checks it is alive
    before handing it out again. Elsewhere every write is a :func:`write_tx`.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None
        self._used = 0.0

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """The connection for one write statement (and reads before it)."""
        if self._engine.dialect.name != "postgresql":
            with write_tx(self._engine) as conn:
                yield conn
            return
        if self._conn is not None and time.monotonic() - self._used > _PING_IDLE_S:
            self.close()
        try:
            with mapped():
                if self._conn is None:
                    self._conn = self._engine.connect().execution_options(
                        isolation_level="AUTOCOMMIT"
                    )
                yield self._conn
                if self._conn.in_transaction():  # SQLAlchemy's own, begun by an execute
                    self._conn.commit()
        except BaseException:
            self.close()  # whatever it was, the next write starts on a clean connection
            raise
        finally:
            self._used = time.monotonic()

    def close(self) -> None:
        """Give the connection back to the pool (the next write takes one again)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


@contextmanager
def read_tx(engine: Engine) -> Iterator[Connection]:
    """A read-only SQL transaction (a consistent snapshot)."""
    with mapped(), engine.connect() as conn, conn.begin():
        yield conn
