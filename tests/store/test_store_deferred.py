"""Writes the fold does not wait for: the same rows, the same errors, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from strata.store import bulk
from strata.store import schema as s
from strata.store.deferred import deferred_writes

AT = datetime(2024, 1, 1, tzinfo=UTC)


def _ns(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "owner": "o", "created_at": AT, "updated_at": AT, **extra}


def _insert(conn: sa.Connection, names: list[str]) -> None:
    stmt = bulk.upsert(conn, s.namespaces, list(_ns("x")), ["name"])
    bulk.execute_many(conn, stmt, [_ns(n) for n in names])


def _names(conn: sa.Connection) -> list[str]:
    return sorted(conn.execute(sa.select(s.namespaces.c.name)).scalars())


def _in_pipeline(conn: sa.Connection) -> bool:
    return getattr(conn.connection.dbapi_connection, "_pipeline", None) is not None


def test_a_read_after_deferred_writes_sees_them(engine: sa.Engine, backend: str) -> None:
    with engine.begin() as conn, deferred_writes(conn):
        _insert(conn, ["a", "b"])
        bulk.delete_in(conn, s.namespaces, "name", ["a"])
        # On PostgreSQL both writes are sent and not yet waited for.
        assert _in_pipeline(conn) is (backend == "postgresql")
        assert _names(conn) == ["b"]
        assert not _in_pipeline(conn)
        _insert(conn, ["c"])
        found = bulk.insert_ignore_many(conn, s.namespaces, [_ns("c"), _ns("d")], ["name"])
        assert found == {"d"}
    with engine.connect() as conn:
        assert _names(conn) == ["b", "c", "d"]
        assert not _in_pipeline(conn)


def test_a_failed_write_is_raised_at_the_next_read(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        _insert(conn, ["kept"])
        savepoint = conn.begin_nested()
        with (
            pytest.raises(sa.exc.IntegrityError, match="created_at") as raised,
            deferred_writes(conn),
        ):
            bad = bulk.upsert(conn, s.namespaces, list(_ns("x")), ["name"])
            bulk.execute_many(conn, bad, [_ns("bad", created_at=None)])  # NOT NULL
            _names(conn)
        # The error names the write that failed, not the read it surfaced at.
        assert "INSERT INTO namespaces" in str(raised.value)
        savepoint.rollback()
        # The connection is out of pipeline mode and its transaction usable again.
        assert not _in_pipeline(conn)
        _insert(conn, ["after"])
    with engine.connect() as conn:
        assert _names(conn) == ["after", "kept"]


def test_a_failed_write_is_raised_at_the_end_of_the_block(engine: sa.Engine) -> None:
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn, deferred_writes(conn):
        _insert(conn, ["a"])
        stmt = bulk.upsert(conn, s.namespaces, list(_ns("x")), ["name"])
        bulk.execute_many(conn, stmt, [_ns("b", updated_at=None)])
    with engine.connect() as conn:
        assert _names(conn) == []  # the whole transaction rolled back


def test_an_error_in_the_block_wins_over_pending_writes(engine: sa.Engine, backend: str) -> None:
    with pytest.raises(KeyError, match="mine"), engine.begin() as conn, deferred_writes(conn):
        _insert(conn, ["a"])
        if backend == "postgresql":  # a write that fails, not yet waited for
            stmt = bulk.upsert(conn, s.namespaces, list(_ns("x")), ["name"])
            bulk.execute_many(conn, stmt, [_ns("b", created_at=None)])
            assert _in_pipeline(conn)
        raise KeyError("mine")
    with engine.begin() as conn:  # the pooled connection is usable, nothing was kept
        assert not _in_pipeline(conn)
        assert _names(conn) == []
        _insert(conn, ["c"])
        assert _names(conn) == ["c"]
