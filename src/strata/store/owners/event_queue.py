"""The queue of acknowledged lineage events the fold has not stored yet.

The only module that reads or writes ``lineage_pending``. The lineage server queues an
event's JSON text as it was hashed and acknowledges it; the fold takes the oldest
events, stores them (:mod:`strata.store.owners.events`) and drops their rows. An event
the fold refuses keeps its row with the reason and is not taken again. On SQLite the
queue lives in a file of its own (:mod:`strata.store.journal`), so every function takes
the connection of whichever database holds it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.schema import lineage_pending

_P = lineage_pending


@dataclass(frozen=True, slots=True)
class Queued:
    """A queued event's payload hash, when it was received and its JSON size in bytes."""

    payload_hash: str
    received_at: datetime
    size: int


def enqueue(conn: Connection, texts: Mapping[str, str], received: datetime) -> set[str]:
    """Queue each JSON text by its payload hash unless it is queued already (one
    statement); the hashes queued now."""
    rows = [
        {"payload_hash": digest, "payload": text, "received_at": received}
        for digest, text in texts.items()
    ]
    return {str(h) for h in bulk.insert_ignore_many(conn, _P, rows, ["payload_hash"])}


def head(conn: Connection, limit: int, *, claim: bool = False) -> list[Queued]:
    """The oldest ``limit`` queued events the fold has not refused, oldest first.

    ``claim`` (PostgreSQL): lock their rows for this transaction and pass over rows
    another transaction has locked, so that folds running at once take different events.
    """
    claimed = claim and conn.dialect.name == "postgresql"

    def build() -> sa.Select[tuple[str, datetime, int]]:
        stmt = (
            sa.select(_P.c.payload_hash, _P.c.received_at, _bytes(conn, _P.c.payload))
            .where(_P.c.error.is_(None))
            .order_by(_P.c.seq)
            .limit(sa.bindparam("n"))
        )
        return stmt.with_for_update(skip_locked=True) if claimed else stmt

    key = ("pending-next", conn.dialect.name, claimed)
    rows = conn.execute(bulk.cached(key, build), {"n": limit}).all()
    return [Queued(str(row[0]), row[1], int(row[2] or 0)) for row in rows]


def _bytes(conn: Connection, text: sa.ColumnElement[str]) -> sa.ColumnElement[int]:
    """The size of ``text`` in bytes, read from its header and not from its characters.

    PostgreSQL may compute it for every queued row before it sorts them and keeps the
    oldest (so it plans a queue whose size it has not yet sampled): ``length`` counted the
    characters of each, a cost that grew with the queue."""
    if conn.dialect.name == "postgresql":
        return sa.func.octet_length(text)
    return sa.func.length(sa.cast(text, sa.LargeBinary))


def texts(conn: Connection, hashes: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(payload hash, JSON text) of the queued events with these hashes."""
    stmt = bulk.select_by_ids(
        "pending-payloads", conn, _P.c.payload_hash, _P.c.payload_hash, _P.c.payload
    )
    for digest, text in bulk.rows_by_ids(conn, stmt, list(hashes)):
        yield str(digest), str(text)


def waiting(conn: Connection, hashes: Sequence[str]) -> set[str]:
    """Which of ``hashes`` wait in the queue (neither folded nor refused)."""
    stmt = bulk.select_by_ids(
        "pending-still", conn, _P.c.payload_hash, _P.c.payload_hash, _P.c.error
    )
    return {str(row[0]) for row in bulk.rows_by_ids(conn, stmt, list(hashes)) if row[1] is None}


def settle(conn: Connection, folded: Sequence[str], refused: Mapping[str, str]) -> None:
    """Drop the rows of the events folded, and keep each refused one with its reason."""
    bulk.delete_in(conn, _P, "payload_hash", folded)
    bulk.update_rows(
        conn, _P, "payload_hash", [{"payload_hash": h, "error": why} for h, why in refused.items()]
    )
