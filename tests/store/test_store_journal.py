"""The pending-event journal beside a SQLite store: created in today's layout, an older
layout brought to it without losing an acknowledged event, a layout that cannot carry
them refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from strata.errors import StoreError
from strata.store import schema as s
from strata.store.engine import create_engine
from strata.store.journal import journal_for

# The table as migration 0006 made it (payload as JSON, before 0007 made it text).
_LAYOUT_0006 = """
CREATE TABLE lineage_pending (
    seq INTEGER NOT NULL, payload_hash VARCHAR(64) NOT NULL, payload JSON NOT NULL,
    received_at DATETIME NOT NULL, error TEXT,
    CONSTRAINT pk_lineage_pending PRIMARY KEY (seq),
    CONSTRAINT uq_lineage_pending_payload_hash UNIQUE (payload_hash)
)"""
_ROW = "INSERT INTO lineage_pending VALUES (?, ?, ?, '2026-11-20 10:00:00.000000', ?)"


def _store(tmp_path: Path) -> sa.Engine:
    return create_engine(f"sqlite:///{tmp_path / 'meta.db'}")


def _journal_file(tmp_path: Path, ddl: str, rows: list[tuple[object, ...]]) -> Path:
    file = tmp_path / "meta.pending.db"
    with sa.create_engine(f"sqlite:///{file}").begin() as conn:
        conn.exec_driver_sql(ddl)
        for row in rows:
            conn.exec_driver_sql(_ROW, row)
    return file


def _columns(engine: sa.Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        info = conn.exec_driver_sql("PRAGMA table_info(lineage_pending)").all()
    return [(r.name, r.type.upper()) for r in info]


def _rows(engine: sa.Engine) -> list[tuple[object, ...]]:
    p = s.lineage_pending
    with engine.connect() as conn:
        query = sa.select(p.c.seq, p.c.payload_hash, p.c.payload, p.c.error).order_by(p.c.seq)
        return [tuple(r) for r in conn.execute(query)]


def test_a_sqlite_store_gets_a_journal_file_in_todays_layout(tmp_path: Path) -> None:
    journal = journal_for(_store(tmp_path))
    assert Path(str(journal.url.database)) == tmp_path / "meta.pending.db"
    assert ("payload", "TEXT") in _columns(journal)
    assert _rows(journal) == []


def test_an_older_journal_keeps_every_acknowledged_event(tmp_path: Path) -> None:
    rows = [(3, "a" * 64, '{"eventType": "START"}', None), (7, "b" * 64, "{}", "refused")]
    _journal_file(tmp_path, _LAYOUT_0006, rows)
    journal = journal_for(_store(tmp_path))
    assert ("payload", "TEXT") in _columns(journal)
    assert _rows(journal) == rows
    journal_for(_store(tmp_path))  # opened again: nothing to do, nothing changes
    assert _rows(journal) == rows
    # The unique hash still holds, under today's name.
    with journal.begin() as conn, pytest.raises(sa.exc.IntegrityError):
        conn.exec_driver_sql(_ROW, (9, "a" * 64, "{}", None))


def test_a_journal_that_cannot_carry_its_events_is_refused_untouched(tmp_path: Path) -> None:
    ddl = "CREATE TABLE lineage_pending (seq INTEGER PRIMARY KEY, body TEXT)"
    file = tmp_path / "meta.pending.db"
    with sa.create_engine(f"sqlite:///{file}").begin() as conn:
        conn.exec_driver_sql(ddl)
        conn.exec_driver_sql("INSERT INTO lineage_pending VALUES (1, '{}')")
    with pytest.raises(StoreError, match=r"meta\.pending\.db holds 1 acknowledged event") as err:
        journal_for(_store(tmp_path))
    assert "payload_hash" in str(err.value)
    with sa.create_engine(f"sqlite:///{file}").connect() as conn:
        assert conn.exec_driver_sql("SELECT seq, body FROM lineage_pending").all() == [(1, "{}")]


def test_an_empty_journal_of_another_layout_is_made_again(tmp_path: Path) -> None:
    _journal_file(tmp_path, "CREATE TABLE lineage_pending (seq INTEGER PRIMARY KEY)", [])
    journal = journal_for(_store(tmp_path))
    assert [name for name, _ in _columns(journal)] == [c.name for c in s.lineage_pending.c]
