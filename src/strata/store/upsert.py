"""Insert-if-absent that answers exactly on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection


def insert_ignore(
    conn: Connection, table: sa.Table, values: dict[str, Any], keys: Sequence[str] | None
) -> bool:
    """Insert ``values`` unless a row with the same ``keys`` exists (``None``: unless
    any unique constraint would be broken); True if inserted.

    The answer comes from ``RETURNING``: psycopg reports ``rowcount == -1`` for
    ``ON CONFLICT DO NOTHING`` whether or not it inserted, so a count cannot say.
    """
    insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    target = list(keys) if keys is not None else None
    first = next(iter(table.primary_key.columns)) if keys is None else table.c[keys[0]]
    stmt = (
        insert(table).values(values).on_conflict_do_nothing(index_elements=target).returning(first)
    )
    return conn.execute(stmt).first() is not None
