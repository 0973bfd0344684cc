"""Many-row INSERT … RETURNING: the same rows and the same errors on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from strata.lineage.record import rows
from strata.store import bulk
from strata.store import schema as s
from strata.store.owners import namespaces

AT = datetime(2024, 1, 1, tzinfo=UTC)


def _ns(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "owner": "o", "created_at": AT, "updated_at": AT, **extra}


def test_insert_ignore_many_returns_only_new_rows(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        first = bulk.insert_ignore_many(conn, s.namespaces, [_ns("a"), _ns("b")], ["name"])
        again = bulk.insert_ignore_many(conn, s.namespaces, [_ns("b"), _ns("c")], ["name"])
        stored = conn.execute(sa.select(s.namespaces.c.name, s.namespaces.c.created_at)).all()
    assert first == {"a", "b"} and again == {"c"}
    assert sorted(stored) == [("a", AT), ("b", AT), ("c", AT)]


def test_returning_rows_carry_decoded_values(engine: sa.Engine) -> None:
    spans = {("ns", f"t{i}"): (AT, AT) for i in range(3)}
    with engine.begin() as conn:
        namespaces.touch(conn, {"ns": (AT, AT)})
        found = rows.touch_dataset_rows(conn, spans)
    assert set(found) == set(spans)
    for row in found.values():
        assert row.facets == {} and row.fold_state == {"facets": {}} and row.is_lake is False


def test_a_refused_row_raises_integrity_error_and_stores_nothing(engine: sa.Engine) -> None:
    bad = [_ns("ok"), {**_ns("bad"), "created_at": None}]  # created_at is NOT NULL
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        bulk.insert_ignore_many(conn, s.namespaces, bad, ["name"])
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.namespaces)).scalar() == 0


def test_execute_many_writes_what_sqlalchemy_writes(engine: sa.Engine) -> None:
    later = datetime(2024, 2, 1, tzinfo=UTC)
    with engine.begin() as conn:
        stmt = bulk.widening_upsert(conn, s.namespaces, list(_ns("a")), ["name"], ())
        bulk.execute_many(conn, stmt, [_ns("a"), _ns("b")])
        # The same upsert again widens the times of a, through the driver as through
        # SQLAlchemy: both end up equal.
        bulk.execute_many(conn, stmt, [{**_ns("a"), "updated_at": later}])
        conn.execute(stmt, [{**_ns("b"), "updated_at": later}])
        bulk.update_rows(conn, s.namespaces, "name", [{"name": "a", "description": "x"}])
        got = conn.execute(
            sa.select(
                s.namespaces.c.name,
                s.namespaces.c.created_at,
                s.namespaces.c.updated_at,
                s.namespaces.c.description,
            ).order_by(s.namespaces.c.name)
        ).all()
    assert got == [("a", AT, later, "x"), ("b", AT, later, None)]


def test_execute_many_raises_integrity_error(engine: sa.Engine) -> None:
    stmt = s.namespaces.insert()
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        bulk.execute_many(conn, stmt, [_ns("a"), _ns("a")])  # the same primary key twice
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.namespaces)).scalar() == 0


def _names(conn: sa.Connection) -> list[tuple[object, ...]]:
    t = s.namespaces
    query = sa.select(t.c.name, t.c.created_at, t.c.updated_at, t.c.description)
    return [tuple(r) for r in conn.execute(query.order_by(t.c.name))]


def test_many_row_writes_match_one_statement_per_row(engine: sa.Engine) -> None:
    # On PostgreSQL an INSERT or a keyed UPDATE of many rows goes as one statement over
    # an array per column; what it stores must be what the statement run per row stores.
    later, earlier = datetime(2024, 2, 1, tzinfo=UTC), datetime(2023, 12, 1, tzinfo=UTC)
    first = [_ns(f"n{i}", description=None if i % 2 else f"d{i}") for i in range(5)]
    widen = [{**_ns("n1"), "updated_at": later}, {**_ns("n3"), "created_at": earlier}]
    widen += [_ns("n9")]
    described = [{"name": "n0", "description": None}, {"name": "n4", "description": "é'\"{}"}]
    results = []
    for many in (True, False):
        with engine.begin() as conn:
            insert = s.namespaces.insert()
            upsert = bulk.widening_upsert(conn, s.namespaces, list(_ns("x")), ["name"], ())
            if many:
                bulk.execute_many(conn, insert, first)
                bulk.execute_many(conn, upsert, widen)
                bulk.update_rows(conn, s.namespaces, "name", described)
            else:
                for row in first:
                    conn.execute(insert, row)
                for row in widen:
                    conn.execute(upsert, row)
                for row in described:
                    values = {"description": row["description"]}
                    t = s.namespaces
                    conn.execute(t.update().where(t.c.name == row["name"]).values(values))
            results.append(_names(conn))
            conn.execute(s.namespaces.delete())
    assert results[0] == results[1]
    assert len(results[0]) == 6


@pytest.mark.parametrize("backend", ["postgresql"])  # SQLite has no arrays
def test_postgresql_sends_many_rows_as_arrays(engine: sa.Engine) -> None:
    t = s.namespaces
    with engine.connect() as conn:
        upsert = bulk.widening_upsert(conn, t, list(_ns("x")), ["name"], ())
        keyed = t.update().where(t.c.name == sa.bindparam("_key"))
        keyed = keyed.values(description=sa.bindparam("description", type_=t.c.description.type))
        computed = t.update().values(description=t.c.name + sa.bindparam("s"))
        narrower = keyed.where(t.c.owner.is_(None))  # more than the key: row by row
        forms = {
            "insert": bulk._driver_form(conn, t.insert(), _ns("x")),
            "upsert": bulk._driver_form(conn, upsert, _ns("x")),
            "update": bulk._driver_form(conn, keyed, {"_key": "x", "description": None}),
            "computed": bulk._driver_form(conn, computed, {"s": "x"}),
            "narrower": bulk._driver_form(conn, narrower, {"_key": "x", "description": None}),
        }
    assert forms["insert"] and forms["insert"].array_sql
    assert "unnest(" in forms["insert"].array_sql and forms["insert"].unique_on == ()
    assert forms["upsert"] and forms["upsert"].unique_on == ("name",)
    assert forms["update"] and forms["update"].unique_on == ("_key",)
    assert forms["computed"] and forms["computed"].array_sql is None
    assert forms["narrower"] and forms["narrower"].array_sql is None
    # ON CONFLICT DO UPDATE may not touch a row twice in one statement: rows repeating a
    # key go one by one, and the later row wins as it does run row by row.
    assert forms["upsert"].takes_arrays([_ns("a"), _ns("b")])
    assert not forms["upsert"].takes_arrays([_ns("a"), _ns("a")])


def test_rows_repeating_a_key_write_as_one_by_one(engine: sa.Engine) -> None:
    later = datetime(2024, 2, 1, tzinfo=UTC)
    with engine.begin() as conn:
        bulk.execute_many(conn, s.namespaces.insert(), [_ns("a"), _ns("b")])
        upsert = bulk.widening_upsert(conn, s.namespaces, list(_ns("a")), ["name"], ())
        bulk.execute_many(conn, upsert, [_ns("a"), {**_ns("a"), "updated_at": later}])
        again = [{"name": "b", "description": "1"}, {"name": "b", "description": "2"}]
        bulk.update_rows(conn, s.namespaces, "name", again)
        got = _names(conn)
    assert got == [("a", AT, later, None), ("b", AT, AT, "2")]


@pytest.mark.parametrize("backend", ["sqlite"])  # PostgreSQL sends arrays (above)
def test_sqlite_sends_many_rows_as_values_of_one_statement(engine: sa.Engine) -> None:
    t = s.datasets
    later = datetime(2024, 3, 1, tzinfo=UTC)

    def dataset(i: int, at: datetime = AT) -> dict[str, object]:
        name = f"t{i}"
        return {
            "uuid": f"u{i}",
            "namespace": "ns",
            "name": name,
            "physical_name": name,
            "facets": {"n": {"i": i, "big": 2**70}},
            "fold_state": {"facets": {}},
            "created_at": at,
            "updated_at": at,
        }

    # 1,500 rows go in chunks of 1,024, 256, 128, … (powers of two); 400 of them exist,
    # and the upsert widens them.
    first = [dataset(i) for i in range(700)]
    second = [dataset(i, later) for i in range(300, 1800)]
    returned = ["namespace", "name", "uuid", "is_lake", "facets", "updated_at"]

    def run(direct: bool) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
        with engine.connect() as conn, conn.begin() as tx:
            namespaces.touch(conn, {"ns": (AT, AT)})
            stmt = bulk.widening_upsert(conn, t, list(first[0]), ["namespace", "name"], returned)
            form = bulk._sqlite_values_form(conn, stmt, first[0])
            assert form is not None and form.largest == 1024  # 8,192 parameters / 8 columns
            if direct:
                bulk.returning_many(conn, stmt, first)
                got = bulk.returning_many(conn, stmt, second)
            else:  # SQLAlchemy's own many-row path
                conn.execute(stmt, first)
                got = conn.execute(stmt, second).all()
            stored = conn.execute(sa.select(t.c.name, t.c.created_at, t.c.updated_at)).all()
            tx.rollback()
        return sorted(tuple(r) for r in got), sorted(tuple(r) for r in stored)

    direct_got, direct_stored = run(True)
    assert (direct_got, direct_stored) == run(False)
    assert len(direct_got) == 1500 and len(direct_stored) == 1800
    by_name = {r[1]: r for r in direct_got}
    assert by_name["t300"][4] == {"n": {"i": 300, "big": 2**70}}
    assert by_name["t300"][5] == later and by_name["t300"][3] is False
    with engine.connect() as conn:
        ignore = bulk.insert_ignore_many(conn, s.namespaces, [_ns("a"), _ns("a")], ["name"])
        assert ignore == {"a"}


def test_lookups_and_deletes_of_many_rows_take_one_statement_on_postgresql(
    engine: sa.Engine, backend: str
) -> None:
    """More rows than a chunk: every row answered and deleted on both backends; one
    statement each on PostgreSQL, whose arrays take any number of rows."""
    names = [f"n{i:04d}" for i in range(bulk.CHUNK * 2 + 17)]
    sent: list[str] = []

    def count(conn: object, cursor: object, statement: str, *_: object) -> None:
        sent.append(statement)

    with engine.begin() as conn:
        bulk.execute_many(conn, s.namespaces.insert(), [_ns(n) for n in names])
        sa.event.listen(conn, "before_cursor_execute", count)
        found = bulk.lookup_rows(
            conn,
            ("test-lookup",),
            "q",
            {"k": None, "n": None},
            [{"k": str(i), "n": n} for i, n in enumerate(names)] + [{"k": "x", "n": "absent"}],
            "SELECT q.k, ns.owner FROM q JOIN namespaces ns ON ns.name = q.n",
        )
        lookups = len(sent)
        bulk.delete_in(conn, s.namespaces, "name", names[1:])
        deletes = len(sent) - lookups
        sa.event.remove(conn, "before_cursor_execute", count)
        left = _names(conn)
    # (SQLite pads a statement's rows by repeating its last: a row may come twice.)
    assert sorted({(int(k), owner) for k, owner in found}) == [(i, "o") for i in range(len(names))]
    assert [row[0] for row in left] == [names[0]]
    # On SQLite a statement per chunk; on PostgreSQL one lookup, and the delete goes to
    # the driver itself, unseen by SQLAlchemy's events.
    sqlite = (len(bulk.chunks([*names, "absent"])), len(bulk.chunks(names[1:])))
    assert (lookups, deletes) == ((1, 0) if backend == "postgresql" else sqlite)


def test_a_delete_of_no_values_sends_no_statement(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold replaces the state histories of the runs it changed, usually none: an
    empty delete must cost nothing (on PostgreSQL a statement of an empty array would)."""
    sent: list[object] = []
    real = bulk.execute_many

    def counted(conn: sa.Connection, stmt: object, rows: list[dict[str, object]]) -> None:
        sent.append(stmt)
        real(conn, stmt, rows)

    monkeypatch.setattr(bulk, "execute_many", counted)
    with engine.begin() as conn:
        bulk.execute_many(conn, s.namespaces.insert(), [_ns("a")])
        bulk.delete_in(conn, s.namespaces, "name", [])
        assert len(sent) == 1
        bulk.delete_in(conn, s.namespaces, "name", ["a"])
        assert len(sent) == 2 and _names(conn) == []
