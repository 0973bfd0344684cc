"""Set-based statements, compiled once: the store's one seam onto the database driver.

The lineage fold, the lake and the build state write many rows with a few statements.
Here they are built once per shape and dialect (:func:`cached`), looked up by one array
(:func:`one_of`) or a padded ``VALUES`` list (:func:`lookup_rows`), and handed to the
driver directly: on PostgreSQL as one statement over one array per column (``unnest``)
or psycopg's pipelined ``executemany`` (see :mod:`~strata.store.deferred`), on SQLite as
``VALUES`` chunks of power-of-two sizes. What the rows mean is the callers' business.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from strata.store import deferred

_CACHE: dict[tuple[Any, ...], Any] = {}
T = TypeVar("T")


def cached(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """A statement built once per ``key``: building and cache-keying a construct costs
    more than executing it, so hot statements are reused with bound parameters."""
    stmt = _CACHE.get(key)
    if stmt is None:
        stmt = _CACHE[key] = build()
    return stmt


CHUNK = 250  # rows per set-based statement: far below SQLite's bound-variable limit


def chunks(items: Iterable[T], size: int = CHUNK) -> list[list[T]]:
    """``items`` in lists of at most ``size``."""
    every = list(items)
    return [every[i : i + size] for i in range(0, len(every), size)]


def one_of(dialect: str, column: Any, name: str) -> Any:
    """``column IN`` the list bound as ``name``.

    On PostgreSQL it is ``= ANY`` of one array: the statement text is the same for any
    number of values, so it is prepared once, where an IN list is a new text (parsed and
    planned again) for every length, and one of thousands of values was read through by
    the driver on every execution. Cache a statement using it per dialect.
    """
    if dialect == "postgresql":
        return column == sa.any_(sa.bindparam(name, type_=postgresql.ARRAY(column.type)))
    return column.in_(sa.bindparam(name, expanding=True))


def lookup_rows(
    conn: Connection,
    key: tuple[Any, ...],
    name: str,
    columns: dict[str, Any],
    rows: Sequence[dict[str, Any]],
    body: str,
    returns: Sequence[Any] = (),
) -> list[Any]:
    """The result rows of ``WITH name(columns) AS (…rows…) body`` over ``rows``.

    One statement does the work of a lookup per row. ``columns`` maps each column to its
    type or None (text). ``returns``: typed result columns, where a value needs
    converting (times on SQLite).

    On PostgreSQL the rows are one array per column (``unnest``), all in one statement
    whose text is the same for every number of rows, parsed and planned once per
    connection; a ``VALUES`` list of hundreds of parameters cost more to plan than to run.
    SQLite has no arrays: there the rows go :data:`CHUNK` at a time as a ``VALUES`` list
    whose length is rounded up to a power of two by repeating the last row, so a handful
    of statements serve every group size (a row's answer may then come twice: callers
    must not mind).
    """
    if not rows:
        return []
    if conn.dialect.name == "postgresql":

        def build_arrays() -> Any:
            arrays = ", ".join(
                f"CAST(:{c} AS {t.compile(dialect=conn.dialect) if t else 'TEXT'}[])"
                for c, t in columns.items()
            )
            stmt = sa.text(
                f"WITH {name}({', '.join(columns)}) AS (SELECT * FROM unnest({arrays})) {body}"
            )
            return stmt.columns(*returns) if returns else stmt

        arrays = {
            c: [row[c] if t or row[c] is None else str(row[c]) for row in rows]
            for c, t in columns.items()
        }
        return list(conn.execute(cached(("unnest", *key), build_arrays), arrays).all())
    out: list[Any] = []
    for part in chunks(rows):
        n = 1 << max(len(part) - 1, 0).bit_length()
        build = partial(_values_statement, name, columns, body, returns, n)
        stmt = cached(("values", *key, n), build)
        padded = [*part, *[part[-1]] * (n - len(part))]
        params = {f"{c}{i}": v for i, row in enumerate(padded) for c, v in row.items()}
        out += conn.execute(stmt, params).all()
    return out


def _values_statement(
    name: str, columns: dict[str, Any], body: str, returns: Sequence[Any], n: int
) -> Any:
    """:func:`lookup_rows`'s statement on SQLite, for ``n`` rows."""
    values = ", ".join("(" + ", ".join(f":{c}{i}" for c in columns) + ")" for i in range(n))
    stmt = sa.text(f"WITH {name}({', '.join(columns)}) AS (VALUES {values}) {body}")
    typed = [sa.bindparam(f"{c}{i}", type_=t) for c, t in columns.items() if t for i in range(n)]
    stmt = stmt.bindparams(*typed) if typed else stmt
    return stmt.columns(*returns) if returns else stmt


def _dialect(conn: Connection) -> Any:
    return postgresql if conn.dialect.name == "postgresql" else sqlite


def insert_ignore(
    conn: Connection, table: sa.Table, values: dict[str, Any], index: Sequence[str] | None
) -> bool:
    """Insert unless a row with the same ``index`` columns exists (``None``: unless any
    unique constraint would be broken); True if inserted.

    The answer comes from ``RETURNING``: psycopg reports ``rowcount == -1`` for
    ``ON CONFLICT DO NOTHING`` whether or not it inserted, so a count cannot say.
    """
    dialect = _dialect(conn)
    key = tuple(index) if index is not None else None
    first = table.c[index[0]] if index else next(iter(table.primary_key.columns))
    stmt = cached(
        ("ignore", dialect.__name__, table.name, tuple(values), key),
        lambda: (
            dialect.insert(table)
            .on_conflict_do_nothing(index_elements=list(index) if index is not None else None)
            .returning(first)
        ),
    )
    return conn.execute(stmt, values).first() is not None


def insert_ignore_many(
    conn: Connection, table: sa.Table, rows: Sequence[dict[str, Any]], index: Sequence[str]
) -> set[Any]:
    """Insert each row unless one with the same ``index`` exists (one statement); the
    first index column's values of the rows inserted."""
    if not rows:
        return set()
    dialect = _dialect(conn)
    stmt = cached(
        ("ignore", dialect.__name__, table.name, tuple(rows[0]), tuple(index)),
        lambda: (
            dialect.insert(table)
            .on_conflict_do_nothing(index_elements=list(index))
            .returning(table.c[index[0]])
        ),
    )
    return {row[0] for row in returning_many(conn, stmt, rows)}


def returning_many(conn: Connection, stmt: Any, rows: Sequence[dict[str, Any]]) -> list[Any]:
    """Run an INSERT … RETURNING once per row of ``rows``; the rows it returned (in no
    particular order).

    SQLAlchemy runs it as one INSERT of many VALUES rows. On PostgreSQL that statement
    (thousands of parameters, a new text for every group size) costs more to parse and
    plan than to run; there the rows go as one array per column instead (see
    :func:`_arrays_sql`), or where that cannot be used one statement per row in psycopg's
    pipeline. On SQLite the VALUES rows go straight to the driver (see
    :class:`_SqliteValues`). Result rows are named tuples of the values (JSON decoded,
    times aware), which is what the callers read.
    """
    if conn.dialect.name == "sqlite":
        many = _sqlite_values_form(conn, stmt, rows[0])
        if many is not None:
            return many.run(conn, rows)
    form = _driver_form(conn, stmt, rows[0]) if conn.dialect.name == "postgresql" else None
    deferred.wait(conn)  # the rows it returns may depend on writes sent before
    if form is None:
        return list(conn.execute(stmt, list(rows)).all())
    from psycopg.rows import namedtuple_row

    out: list[Any] = []
    with deferred.driver_errors(conn, form.sql):
        raw = conn.connection.dbapi_connection
        with raw.cursor(row_factory=namedtuple_row) as cur:  # type: ignore[union-attr]
            if form.takes_arrays(rows):
                cur.execute(form.array_sql, form.arrays(rows))
                return list(cur.fetchall())
            if len(rows) == 1:  # a pipeline's set-up and sync cost more than its one row
                cur.execute(form.sql, form.params(rows)[0])
                return list(cur.fetchall())
            cur.executemany(form.sql, form.params(rows), returning=True)
            while True:
                out.extend(cur.fetchall())
                if not cur.nextset():
                    break
    return out


def execute_many(conn: Connection, stmt: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Run ``stmt`` once per row of ``rows``, as ``conn.execute(stmt, rows)`` does.

    The statement is compiled once and handed to the driver with the rows' values bound
    as SQLAlchemy binds them (its own per-row parameter handling cost the fold more than
    the database did for its plain multi-row writes): an INSERT on PostgreSQL as one
    statement over an array per column, anything else through ``executemany``. Inside
    :func:`~strata.store.deferred.deferred_writes` it is sent and not waited for.
    """
    if not rows:
        return
    form = _driver_form(conn, stmt, rows[0])
    if form is None:
        conn.execute(stmt, list(rows))
        return
    _on_driver(conn, form.sql, lambda cur: form.run(cur, rows))


def execute_arrays(conn: Connection, sql: str, arrays: dict[str, list[Any]]) -> None:
    """Run the PostgreSQL write ``sql``, whose parameters are one array per column (given
    as :func:`_array_param` writes them), as :func:`execute_many` runs its array form: inside
    :func:`~strata.store.deferred.deferred_writes` it is sent and not waited for.

    For a set-based write SQLAlchemy cannot build, or :func:`execute_many` would send row
    by row."""
    _on_driver(conn, sql, lambda cur: cur.execute(sql, arrays))


def _on_driver(conn: Connection, sql: str, run: Callable[[Any], None]) -> None:
    """``run`` the write ``sql`` on a driver cursor: deferred where a block allows it."""
    if deferred.send(conn, sql, run):
        return
    with deferred.driver_errors(conn, sql):
        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            run(cur)
        finally:
            cur.close()


@dataclass(frozen=True)
class _DriverForm:
    """A statement compiled for rows of given keys: its SQL and how to bind a row; for a
    PostgreSQL INSERT also the same statement over one array per column."""

    sql: str
    names: tuple[str, ...]
    processors: dict[str, Any]
    positional: bool
    array_sql: str | None = None
    # ON CONFLICT DO UPDATE may not touch a row twice in one statement: rows sharing
    # these columns' values go one by one.
    unique_on: tuple[str, ...] = ()

    def params(self, rows: Sequence[dict[str, Any]]) -> list[Any]:
        # (name, processor or None) looked up once: this runs for every row a fold writes.
        bind = [(n, self.processors.get(n)) for n in self.names]
        if self.positional:
            return [tuple([p(r[n]) if p else r[n] for n, p in bind]) for r in rows]
        return [{n: p(r[n]) if p else r[n] for n, p in bind} for r in rows]

    def run(self, cur: Any, rows: Sequence[dict[str, Any]]) -> None:
        """Execute for ``rows`` on the driver's cursor ``cur``."""
        if self.takes_arrays(rows):
            cur.execute(self.array_sql, self.arrays(rows))
        elif len(rows) == 1:
            cur.execute(self.sql, self.params(rows)[0])
        else:
            cur.executemany(self.sql, self.params(rows))

    def takes_arrays(self, rows: Sequence[dict[str, Any]]) -> bool:
        if self.array_sql is None or len(rows) < 2:
            return False
        on = self.unique_on
        return not on or len({tuple(r[c] for c in on) for r in rows}) == len(rows)

    def arrays(self, rows: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
        out = {}
        for n in self.names:
            proc = self.processors.get(n)
            out[n] = [proc(r[n]) for r in rows] if proc else [r[n] for r in rows]
        return out


def _driver_form(conn: Connection, stmt: Any, row: dict[str, Any]) -> _DriverForm | None:
    """``stmt`` compiled as SQLAlchemy compiles it for an executemany of rows like
    ``row``; None where the driver form would not bind the same (then SQLAlchemy runs it).

    Kept per statement object: callers pass statements built once (:func:`cached`), so
    the cache holds a form per statement, not per call."""
    keys = tuple(sorted(row))
    key = ("driver", conn.dialect.name, stmt, keys)
    if key in _CACHE:
        return _CACHE[key]  # type: ignore[no-any-return]
    compiled = stmt.compile(dialect=conn.dialect, column_keys=list(keys), for_executemany=True)
    positional = bool(compiled.positional)
    names = tuple(compiled.positiontup or ()) if positional else tuple(compiled.binds)
    form = None
    if (
        set(names) <= set(keys)
        and not compiled.escaped_bind_names
        and not compiled.literal_execute_params
        and not compiled.post_compile_params
    ):
        arrays = None
        if conn.dialect.name == "postgresql" and not positional:
            arrays = _arrays_sql(conn, stmt, compiled.string, names)
        form = _DriverForm(
            compiled.string,
            names,
            dict(compiled._bind_processors),
            positional,
            *(arrays or (None, ())),
        )
    _CACHE[key] = form
    return form


@dataclass(frozen=True, eq=False)
class _SqliteValues:
    """An ``INSERT … VALUES (?, …) … RETURNING …`` for SQLite, split around its one row
    of placeholders so that many rows go in one statement.

    SQLAlchemy's own many-row path handles every parameter and every result value of
    every row in Python, which cost the lineage fold more than SQLite's work did. Here
    each value is converted once by the column's bind processor, results by the
    returning columns' result processors. Rows go in chunks whose sizes are powers of
    two, so that a few statement texts (prepared once, kept in the driver's statement
    cache) serve every number of rows.
    """

    form: _DriverForm
    head: str  # up to and including "VALUES "
    row: str  # "(?, ?, …)"
    tail: str  # ON CONFLICT … RETURNING …
    result: Any  # a named tuple type of the returning columns
    processors: tuple[Any, ...]  # a result processor (or None) per returning column
    largest: int  # rows per chunk at most
    texts: dict[int, str] = field(default_factory=dict)  # the statement, by rows

    def run(self, conn: Connection, rows: Sequence[dict[str, Any]]) -> list[Any]:
        params = self.form.params(rows)
        out: list[Any] = []
        raw = conn.connection.dbapi_connection
        cur = raw.cursor()  # type: ignore[union-attr]
        try:
            at = 0
            while at < len(params):
                size = min(self.largest, 1 << ((len(params) - at).bit_length() - 1))
                sql = self._sql(size)
                flat = [value for row in params[at : at + size] for value in row]
                with deferred.driver_errors(conn, sql):
                    cur.execute(sql, flat)
                    found = cur.fetchall()
                for values in found:
                    out.append(
                        self.result._make(
                            p(v) if p else v for p, v in zip(self.processors, values, strict=True)
                        )
                    )
                at += size
        finally:
            cur.close()
        return out

    def _sql(self, size: int) -> str:
        sql = self.texts.get(size)
        if sql is None:
            sql = self.texts[size] = self.head + ", ".join([self.row] * size) + self.tail
        return sql


# SQLite allows 32,766 parameters a statement; chunks stay well below that.
_SQLITE_PARAMS = 8192


def _sqlite_values_form(conn: Connection, stmt: Any, row: dict[str, Any]) -> _SqliteValues | None:
    """``stmt`` as a :class:`_SqliteValues`, or None where it is not a plain INSERT with
    RETURNING whose only parameters are its row's values."""
    key = ("sqlite-form", stmt, tuple(sorted(row)))
    if key in _CACHE:
        return _CACHE[key]  # type: ignore[no-any-return]
    made = None
    form = _driver_form(conn, stmt, row)
    returning = getattr(stmt, "_returning", ())
    sql = form.sql if form is not None else ""
    start = sql.find(") VALUES (")
    if form is not None and form.positional and returning and start > 0:
        start += len(") VALUES ")
        end = sql.find(")", start) + 1
        placeholders = sql[start:end]
        if (
            placeholders == "(" + ", ".join(["?"] * len(form.names)) + ")"
            and "?" not in sql[:start] + sql[end:]
            and all(isinstance(c, sa.Column) for c in returning)
        ):
            names = [c.name for c in returning]
            made = _SqliteValues(
                form,
                sql[:start],
                placeholders,
                sql[end:],
                collections.namedtuple("Returned", names, rename=True),
                tuple(c.type._cached_result_processor(conn.dialect, None) for c in returning),
                max(1, 1 << ((_SQLITE_PARAMS // max(1, len(form.names))).bit_length() - 1)),
            )
    _CACHE[key] = made
    return made


# A bind as psycopg is sent it, with its cast if any: a type name of upper-case words,
# never taken past the name (an operator after it would make the statement another one).
_TYPE_WORD = r"(?!(?:AND|OR|NOT|IS|IN)\b)[A-Z][A-Z0-9_]*"
_BIND = rf"%\((\w+)\)s(?:::({_TYPE_WORD}(?: {_TYPE_WORD})*))?"
_PLACEHOLDER = re.compile(_BIND)
_SET_ITEM = re.compile(r"(\w+)=" + _BIND)
_UPDATE = re.compile(r"UPDATE (\w+) SET (.+) WHERE (\w+)\.(\w+) = " + _BIND)


def _arrays_sql(
    conn: Connection, stmt: Any, sql: str, names: tuple[str, ...]
) -> tuple[str, tuple[str, ...]] | None:
    """``stmt`` (compiled to ``sql`` for PostgreSQL) rewritten to take one array per
    parameter, every row at once, and the parameters the rows must not repeat values of;
    None for a statement not of the shapes below.

    One statement then writes every row: per row, the database does not set up a new
    execution, nor does the driver send one, which took most of the time of a group's
    writes. Row triggers, constraints and ON CONFLICT act on each row as before. Each
    array goes in the form :func:`_array_param` picks for its type.

    - ``INSERT INTO t (…) VALUES (%(a)s::T, …) …`` inserts the rows of ``unnest(…)``; with
      ON CONFLICT DO UPDATE, which may not touch a row twice, rows must differ on the
      conflict target.
    - ``UPDATE t SET a=%(a)s::T, … WHERE t.k = %(key)s::T`` joins the rows of ``unnest(…)``
      on the key, which rows must not repeat.
    """
    table = getattr(stmt, "table", None)
    if table is None:
        return None
    binds: list[tuple[str, str | None]] = []  # (parameter, its cast), in order
    if isinstance(stmt, sa.Insert):
        start = sql.find(") VALUES (")
        if start < 0 or not sql.startswith("INSERT INTO "):
            return None
        start += len(") VALUES (")
        depth, end = 0, start
        while end < len(sql) and (depth or sql[end] != ")"):
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            end += 1
        for item in sql[start:end].split(", "):
            m = _PLACEHOLDER.fullmatch(item)
            if m is None:
                return None  # a value that is not a plain bind
            binds.append((m.group(1), m.group(2)))
        head, tail = sql[: start - len("VALUES (")], sql[end + 1 :]
        conflict = getattr(stmt, "_post_values_clause", None)
        unique = tuple(
            c if isinstance(c, str) else c.key
            for c in getattr(conflict, "inferred_target_elements", None) or ()
            if getattr(conflict, "update_values_to_set", None)
        )
        parts = (f"{head}SELECT * FROM unnest(", f"){tail}")
    elif isinstance(stmt, sa.Update):
        m = _UPDATE.fullmatch(sql)
        if m is None or m.group(1) != table.name or m.group(3) != table.name:
            return None
        sets = [_SET_ITEM.fullmatch(item) for item in m.group(2).split(", ")]
        if not all(sets):
            return None
        binds = [(x.group(2), x.group(3)) for x in sets if x] + [(m.group(5), m.group(6))]
        columns = [x.group(1) for x in sets if x]
        if any(x.group(1) != x.group(2) for x in sets if x):
            return None
        key = m.group(5)
        unique = (key,)
        parts = (
            f"UPDATE {table.name} SET {', '.join(f'{c}=v.{c}' for c in columns)} FROM unnest(",
            f") AS v({', '.join(columns)}, {key}) WHERE {table.name}.{m.group(4)} = v.{key}",
        )
    else:
        return None
    if sorted(n for n, _ in binds) != sorted(names):
        return None
    arrays = []
    for name, cast in binds:
        if cast is None and name not in table.c:
            return None  # no type to make its array of
        arrays.append(_array_param(name, cast or table.c[name].type.compile(conn.dialect)))
    return ", ".join(arrays).join(parts), unique


_SHORT_TEXT = re.compile(r"VARCHAR\(\d+\)", re.IGNORECASE)


def _array_param(name: str, sql_type: str) -> str:
    """The placeholder of an array parameter of ``sql_type`` elements.

    Strings of bounded length (ids, hashes, names) go in text form, which
    :mod:`~strata.store.arrays` writes in one pass; everything else in binary. Long texts
    (an event's JSON) would be escaped into an array literal and parsed out of it again
    by the server, which cost the lineage server more than psycopg's binary loop; and
    psycopg's binary form of other elements is about four times as fast as its text
    form."""
    form = "s" if _SHORT_TEXT.fullmatch(sql_type) else "b"
    return f"%({name}){form}::{sql_type}[]"


def update_rows(
    conn: Connection, table: sa.Table, key: str, rows: Sequence[dict[str, Any]]
) -> None:
    """Update each row whose ``key`` column equals the row's ``key`` value (one statement
    for all of them): every row gives the same columns, each set to its value."""
    if not rows:
        return
    columns = tuple(c for c in rows[0] if c != key)
    stmt = _CACHE.get(("update", table.name, key, columns))
    if stmt is None:
        stmt = _CACHE[("update", table.name, key, columns)] = (
            table.update()
            .where(table.c[key] == sa.bindparam("_key"))
            .values({c: sa.bindparam(c, type_=table.c[c].type) for c in columns})
        )
    execute_many(conn, stmt, [{"_key": r[key], **{c: r[c] for c in columns}} for r in rows])


def delete_in(conn: Connection, table: sa.Table, column: str, values: Sequence[Any]) -> None:
    """Delete the rows whose ``column`` is one of ``values`` (none: no statement)."""
    if not values:
        return
    dialect = conn.dialect.name
    stmt = cached(
        ("delete-in", table.name, column, dialect),
        lambda: table.delete().where(one_of(dialect, table.c[column], "values")),
    )
    every = sorted(set(values))
    # One array on PostgreSQL; SQLite's IN list is bound value by value.
    for chunk in [every] if dialect == "postgresql" else chunks(every):
        execute_many(conn, stmt, [{"values": list(chunk)}])


def upsert(conn: Connection, table: sa.Table, columns: Sequence[str], index: Sequence[str]) -> Any:
    """INSERT, or overwrite every given column of the row with the same ``index``."""
    dialect = _dialect(conn)

    def build() -> Any:
        stmt = dialect.insert(table)
        return stmt.on_conflict_do_update(
            index_elements=list(index),
            set_={c: stmt.excluded[c] for c in columns if c not in index},
        )

    return cached(("upsert", dialect.__name__, table.name, tuple(columns), tuple(index)), build)


def claim(
    conn: Connection,
    table: sa.Table,
    values: dict[str, Any],
    index: Sequence[str],
    claimable: sa.ColumnElement[bool],
) -> Any:
    """Insert ``values``, or overwrite the row with the same ``index`` where the existing
    row is ``claimable``; in one statement, so a row removed or changed meanwhile never
    goes unseen. Returns the row as it stands after (the new values: claimed)."""
    stmt = _dialect(conn).insert(table).values(**values)
    kept = {
        c: sa.case((claimable, stmt.excluded[c]), else_=table.c[c])
        for c in values
        if c not in index
    }
    stmt = stmt.on_conflict_do_update(index_elements=list(index), set_=kept)
    return conn.execute(stmt.returning(*[table.c[c] for c in values])).one()


def largest_upsert(conn: Connection, table: sa.Table, index: Sequence[str], column: str) -> Any:
    """INSERT, or keep the larger non-NULL of the existing and the new ``column``: the
    row then does not depend on which write came first."""
    dialect = _dialect(conn)

    def build() -> Any:
        stmt = dialect.insert(table)
        new, old = stmt.excluded[column], table.c[column]
        return stmt.on_conflict_do_update(
            index_elements=list(index),
            set_={column: new},
            where=sa.and_(new.is_not(None), sa.or_(old.is_(None), new > old)),
        )

    return cached(("largest", dialect.__name__, table.name, tuple(index), column), build)


def widening_upsert(
    conn: Connection,
    table: sa.Table,
    columns: Sequence[str],
    index: Sequence[str],
    returning: Sequence[str],
) -> Any:
    """INSERT, or stretch the existing row's created/updated times to cover the new ones."""
    dialect = _dialect(conn)

    def build() -> Any:
        stmt = dialect.insert(table)
        new = stmt.excluded
        created, updated = table.c.created_at, table.c.updated_at
        stmt = stmt.on_conflict_do_update(
            index_elements=list(index),
            set_={
                "created_at": sa.case((new.created_at < created, new.created_at), else_=created),
                "updated_at": sa.case((new.updated_at > updated, new.updated_at), else_=updated),
            },
            # Without RETURNING only rows that really widen are written.
            where=None if returning else sa.or_(new.created_at < created, new.updated_at > updated),
        )
        return stmt.returning(*(table.c[c] for c in returning)) if returning else stmt

    return cached(
        ("widen", dialect.__name__, table.name, tuple(columns), tuple(index), tuple(returning)),
        build,
    )


def widen_times(conn: Connection, table: sa.Table, key: str, value: Any, at: datetime) -> None:
    """Stretch the times of the row whose ``key`` is ``value`` to cover ``at``."""
    col = table.c[key]

    def build() -> Any:
        at_ = sa.bindparam("at", type_=col.table.c.created_at.type)
        return (
            table.update()
            .where(
                col == sa.bindparam("key"),
                sa.or_(at_ < table.c.created_at, at_ > table.c.updated_at),
            )
            .values(
                created_at=sa.case((at_ < table.c.created_at, at_), else_=table.c.created_at),
                updated_at=sa.case((at_ > table.c.updated_at, at_), else_=table.c.updated_at),
            )
        )

    conn.execute(cached(("widen-update", table.name, key), build), {"key": value, "at": at})


def counts_created_before(
    conn: Connection, table: sa.FromClause, ends: Sequence[datetime]
) -> list[int]:
    """How many rows of ``table`` (or a relation of one) were created before each of
    ``ends``, in one pass."""
    created = table.c.created_at
    row = conn.execute(
        sa.select(*[sa.func.sum(sa.case((created < end, 1), else_=0)) for end in ends])
    ).one()
    return [int(row[i] or 0) for i in range(len(ends))]


def select_by_ids(key: str, conn: Connection, column: Any, *columns: Any) -> Any:
    """``SELECT columns`` of the rows whose ``column`` is one of the ``:ids`` parameter
    (:func:`one_of`), built once per ``key`` and dialect: the statement
    :func:`rows_by_ids` takes."""
    dialect = conn.dialect.name
    return cached(
        ("by-ids", key, dialect), lambda: sa.select(*columns).where(one_of(dialect, column, "ids"))
    )


def rows_by_ids(conn: Connection, stmt: Any, ids: Collection[str], size: int = 900) -> list[Any]:
    """The rows of ``stmt`` for ``ids``, its ``:ids`` parameter made by :func:`one_of`: on
    PostgreSQL one statement (one array parameter), on SQLite slices of ``size``."""
    if not ids:
        return []
    if conn.dialect.name == "postgresql":
        return list(conn.execute(stmt, {"ids": list(ids)}).all())
    rows: list[Any] = []
    for part in chunks(ids, size):
        rows.extend(conn.execute(stmt, {"ids": part}).all())
    return rows
