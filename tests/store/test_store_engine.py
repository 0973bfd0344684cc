"""SQLite connections: the settings every one of them runs with, and a pool that keeps them."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from strata.errors import StoreError
from strata.store import engine as engine_module
from strata.store.engine import create_engine


def test_sqlite_connections_run_with_the_store_settings(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'meta.db'}")
    with engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        got = {
            pragma: raw.execute(f"PRAGMA {pragma}").fetchone()[0]
            for pragma in ("journal_mode", "synchronous", "foreign_keys", "wal_autocheckpoint")
        }
    engine.dispose()
    # synchronous 1 is NORMAL; checkpoints every 10,000 pages, not every 1,000.
    assert got == {
        "journal_mode": "wal",
        "synchronous": 1,
        "foreign_keys": 1,
        "wal_autocheckpoint": 10_000,
    }


def test_concurrent_reads_keep_their_connections(tmp_path: Path) -> None:
    # A server's reads run in up to dozens of threads; a connection opened beyond the pool
    # is closed after use, and opening one again runs every pragma above.
    engine = create_engine(f"sqlite:///{tmp_path / 'meta.db'}")
    for _ in range(2):
        with ExitStack() as stack:
            conns = [stack.enter_context(engine.connect()) for _ in range(12)]
            assert len(conns) == 12
    assert engine.pool.checkedin() == 12  # type: ignore[attr-defined]
    engine.dispose()


def test_a_page_cache_of_its_own_size(tmp_path: Path) -> None:
    def cache_kib(**kwargs: int) -> int:
        engine = create_engine(f"sqlite:///{tmp_path / 'meta.db'}", **kwargs)
        with engine.connect() as conn:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            value = int(raw.execute("PRAGMA cache_size").fetchone()[0])
        engine.dispose()
        return value

    assert cache_kib() == -2000  # SQLite's default, about 2 MB
    assert cache_kib(sqlite_cache_mb=128) == -128 * 1024


@pytest.mark.parametrize("backend", ["postgresql"])  # SQLite has no server to drop it
def test_an_idle_connection_the_server_dropped_is_replaced(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(db_url, pool_size=1, max_overflow=0)
    pings: list[int] = []
    real_ping = engine.dialect.do_ping

    def ping(dbapi_conn: Any) -> bool:
        pings.append(1)
        return bool(real_ping(dbapi_conn))

    monkeypatch.setattr(engine.dialect, "do_ping", ping)
    pid_of = "SELECT pg_backend_pid()"
    with engine.connect() as conn:
        first = conn.exec_driver_sql(pid_of).scalar()
    with engine.connect() as conn:  # used a moment ago: handed out unchecked
        assert conn.exec_driver_sql(pid_of).scalar() == first
    assert pings == []
    with create_engine(db_url, poolclass=sa.pool.NullPool).connect() as other:
        other.exec_driver_sql(f"SELECT pg_terminate_backend({first})")
    monkeypatch.setattr(engine_module, "_PING_IDLE_S", 0.0)  # as if idle for long
    with engine.connect() as conn:
        second = conn.exec_driver_sql(pid_of).scalar()
    assert pings and second != first
    engine.dispose()


def test_a_statement_connection_commits_each_statement_alone(db_url: str) -> None:
    """On PostgreSQL a write on a ``StatementConnection`` stands however the block ends (no
    BEGIN or COMMIT is sent around it); elsewhere it is a write transaction. Either way a
    connection given back to the pool is transactional again."""
    engine = create_engine(db_url, pool_size=1, max_overflow=0)
    ns = sa.table("namespaces", sa.column("name"), sa.column("created_at"), sa.column("updated_at"))

    def add(conn: sa.Connection, name: str) -> None:
        at = sa.func.current_timestamp()
        conn.execute(sa.insert(ns).values(name=name, created_at=at, updated_at=at))

    held = engine_module.StatementConnection(engine)
    with held.tx() as conn:
        add(conn, "first")
    with pytest.raises(RuntimeError), held.tx() as conn:
        add(conn, "alone")
        raise RuntimeError("after the statement")
    held.close()
    with pytest.raises(RuntimeError), engine_module.write_tx(engine) as conn:  # same connection
        add(conn, "in-a-transaction")
        raise RuntimeError("after the statement")
    with engine.connect() as conn:
        names = conn.execute(sa.select(ns.c.name).order_by(ns.c.name)).scalars().all()
    engine.dispose()
    assert names == (["alone", "first"] if engine.dialect.name == "postgresql" else ["first"])


@pytest.mark.parametrize("backend", ["postgresql"])  # SQLite writes in transactions
def test_a_statement_connection_is_kept_while_in_use(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(db_url, pool_size=2, max_overflow=0)
    held = engine_module.StatementConnection(engine)
    pid_of = "SELECT pg_backend_pid()"

    def pid() -> int:
        with held.tx() as conn:
            return int(conn.exec_driver_sql(pid_of).scalar_one())

    first = pid()
    assert pid() == first
    assert engine.pool.checkedout() == 1  # kept between writes
    with pytest.raises(StoreError, match="no_such_table"), held.tx() as conn:
        conn.exec_driver_sql("SELECT * FROM no_such_table")
    assert engine.pool.checkedout() == 0  # a failed statement gives it back
    second = pid()
    with create_engine(db_url, poolclass=sa.pool.NullPool).connect() as other:
        other.exec_driver_sql(f"SELECT pg_terminate_backend({second})")
    # Unused for long: given back, and the pool replaces the one the server dropped.
    monkeypatch.setattr(engine_module, "_PING_IDLE_S", 0.0)
    assert pid() not in (second, None)
    held.close()
    assert engine.pool.checkedout() == 0
    engine.dispose()
