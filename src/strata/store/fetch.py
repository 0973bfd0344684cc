"""Reading many plain rows fast: the statement's rows as tuples, fetched by the driver.

SQLAlchemy builds a ``Row`` per row through its result machinery; for reads of tens of
thousands of rows of strings and integers (``strata status`` over a whole namespace)
that cost several times the query itself. Only for statements whose values are plain
strings, numbers and booleans: they are rendered into the SQL text, and columns come
back as the driver returns them (no type processing).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection


def plain_rows(conn: Connection, stmt: Any) -> list[tuple[Any, ...]]:
    """Run ``stmt`` on ``conn``'s transaction and return its rows as plain tuples."""
    sql = str(stmt.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    if conn.dialect.name == "postgresql":
        sql = sql.replace("%", "%%")  # psycopg reads % as a placeholder even without params
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        return list(cursor.fetchall())
    finally:
        cursor.close()
