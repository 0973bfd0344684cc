"""Many-row INSERT … RETURNING: the same rows and the same errors on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from strata.lineage import rows
from strata.store import schema as s

AT = datetime(2024, 1, 1, tzinfo=UTC)


def _ns(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "owner": "o", "created_at": AT, "updated_at": AT, **extra}


def test_insert_ignore_many_returns_only_new_rows(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        first = rows.insert_ignore_many(conn, s.namespaces, [_ns("a"), _ns("b")], ["name"])
        again = rows.insert_ignore_many(conn, s.namespaces, [_ns("b"), _ns("c")], ["name"])
        stored = conn.execute(sa.select(s.namespaces.c.name, s.namespaces.c.created_at)).all()
    assert first == {"a", "b"} and again == {"c"}
    assert sorted(stored) == [("a", AT), ("b", AT), ("c", AT)]


def test_returning_rows_carry_decoded_values(engine: sa.Engine) -> None:
    spans = {("ns", f"t{i}"): (AT, AT) for i in range(3)}
    with engine.begin() as conn:
        rows.touch_namespaces(conn, {"ns": (AT, AT)})
        found = rows.touch_dataset_rows(conn, spans)
    assert set(found) == set(spans)
    for row in found.values():
        assert row.facets == {} and row.fold_state == {"facets": {}} and row.is_lake is False


def test_a_refused_row_raises_integrity_error_and_stores_nothing(engine: sa.Engine) -> None:
    bad = [_ns("ok"), {**_ns("bad"), "created_at": None}]  # created_at is NOT NULL
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        rows.insert_ignore_many(conn, s.namespaces, bad, ["name"])
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.namespaces)).scalar() == 0


def test_execute_many_writes_what_sqlalchemy_writes(engine: sa.Engine) -> None:
    later = datetime(2024, 2, 1, tzinfo=UTC)
    with engine.begin() as conn:
        stmt = rows.widening_upsert(conn, s.namespaces, list(_ns("a")), ["name"], ())
        rows.execute_many(conn, stmt, [_ns("a"), _ns("b")])
        # The same upsert again widens the times of a, through the driver as through
        # SQLAlchemy: both end up equal.
        rows.execute_many(conn, stmt, [{**_ns("a"), "updated_at": later}])
        conn.execute(stmt, [{**_ns("b"), "updated_at": later}])
        rows.update_rows(conn, s.namespaces, "name", [{"name": "a", "description": "x"}])
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
        rows.execute_many(conn, stmt, [_ns("a"), _ns("a")])  # the same primary key twice
    with engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(s.namespaces)).scalar() == 0
