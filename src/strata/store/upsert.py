"""Insert-if-absent that works the same on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection


def insert_ignore(
    conn: Connection, table: sa.Table, values: dict[str, Any], keys: Sequence[str]
) -> bool:
    """Insert ``values`` unless a row with the same ``keys`` exists; True if inserted."""
    if conn.dialect.name == "postgresql":
        stmt: Any = (
            postgresql.insert(table)
            .values(values)
            .on_conflict_do_nothing(index_elements=list(keys))
        )
    else:
        stmt = sqlite.insert(table).values(values).on_conflict_do_nothing(index_elements=list(keys))
    return bool(conn.execute(stmt).rowcount)
