"""The contract of the datasets family's rows (``datasets``), on every backend: the fold
creates once and only widens, the lake makes its datasets (taking over one known from
events), the current version moves by the commit's statement or by the caller's pick,
locks hold against another writer, and hiding takes exactly what it names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from strata import ids
from strata.store.owners import namespaces
from strata.store.owners.datasets import rows, versions

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _new(ns: str, name: str, lo: datetime, hi: datetime) -> dict[str, Any]:
    return {
        "uuid": ids.dataset_uuid(ns, name),
        "namespace": ns,
        "name": name,
        "physical_name": name,
        "facets": {},
        "fold_state": {"facets": {}},
        "created_at": lo,
        "updated_at": hi,
    }


def _get(engine: sa.Engine, uuid: str, *cols: str) -> tuple[Any, ...]:
    d = rows.relation("d")
    with engine.connect() as conn:
        return tuple(conn.execute(sa.select(*[d.c[c] for c in cols]).where(d.c.uuid == uuid)).one())


def _seed(engine: sa.Engine) -> tuple[str, str]:
    with engine.begin() as conn:
        namespaces.ensure(conn, "ns", AT)
        namespaces.ensure(conn, "other", AT)
        found = rows.touch(conn, [_new("ns", "a", AT, AT), _new("other", "b", AT, AT)])
    return found[("ns", "a")].uuid, found[("other", "b")].uuid


def test_the_fold_creates_once_widens_and_stores_what_it_merged(engine: sa.Engine) -> None:
    a, _ = _seed(engine)
    with engine.begin() as conn:
        wider = _new("ns", "a", AT - timedelta(hours=1), AT + timedelta(hours=1))
        (row,) = rows.touch(conn, [wider]).values()
        assert (row.uuid, row.is_lake, row.facets) == (a, False, {})
        row.facets, row.fold_state = {"doc": {"v": 1}}, {"facets": {"doc": ["t"]}}
        rows.write_facets(conn, [row], {a})
        rows.update(conn, [{"uuid": a, "description": "about a"}])
        assert rows.touch(conn, []) == {}
    assert _get(engine, a, "created_at", "updated_at", "facets", "description") == (
        AT - timedelta(hours=1),
        AT + timedelta(hours=1),
        {"doc": {"v": 1}},
        "about a",
    )
    # Stamps alone: the facets stay as stored.
    with engine.begin() as conn:
        (row,) = rows.touch(conn, [_new("ns", "a", AT, AT)]).values()
        row.facets, row.fold_state = {"ignored": {}}, {"facets": {"doc": ["u"]}}
        rows.write_facets(conn, [row], set())
    assert _get(engine, a, "facets", "fold_state") == (
        {"doc": {"v": 1}},
        {"facets": {"doc": ["u"]}},
    )


def test_the_lake_takes_over_a_dataset_events_made_and_moves_its_current(
    engine: sa.Engine,
) -> None:
    a, _ = _seed(engine)
    lake_row = {**_new("ns", "a", AT, AT), "uuid": "ignored", "is_lake": True}
    new_row = {**_new("ns", "c", AT, AT), "is_lake": True}
    version = "01890000-0000-7000-8000-000000000001"
    with engine.begin() as conn:
        assert rows.ensure_lake(conn, lake_row) == a
        assert rows.ensure_lake(conn, new_row) == new_row["uuid"]
        assert rows.ensure_lake(conn, {**new_row, "physical_name": "x"}) == new_row["uuid"]
        rows.set_partition_by(conn, a, ["region"])
        versions.upsert(conn, [{"uuid": version, "dataset_uuid": a, "created_at": AT}])
        conn.execute(rows.move_current(), {"ds_uuid": a, "v_uuid": version, "now": AT})
    assert _get(engine, a, "is_lake", "partition_by", "current_version_uuid") == (
        True,
        ["region"],
        version,
    )
    assert _get(engine, new_row["uuid"], "is_lake", "physical_name") == (True, "c")
    # The caller's pick, an expression over the row: here, none of the dataset's versions
    # newer than an hour after AT.
    dv = versions.relation("dv")

    def pick(d: Any) -> Any:
        newer = dv.c.created_at > AT + timedelta(hours=1)
        return sa.select(dv.c.uuid).where(dv.c.dataset_uuid == d.c.uuid, newer).scalar_subquery()

    with engine.begin() as conn:
        rows.set_current(conn, [a, new_row["uuid"]], pick, "test-pick")
    assert _get(engine, a, "current_version_uuid") == (None,)


# SQLite's write lock is the lock there: row locks are PostgreSQL's alone.
@pytest.mark.parametrize("backend", ["postgresql"])
def test_a_lock_holds_datasets_against_another_writer(engine: sa.Engine) -> None:
    a, b = _seed(engine)
    with engine.begin() as holder:
        rows.lock(holder, [a])
        with engine.connect() as other:
            other.execute(sa.text("SET lock_timeout = '200ms'"))
            with pytest.raises(sa.exc.OperationalError):
                rows.lock(other, [a])
            other.rollback()
            rows.lock(other, [b])  # another dataset is free
            other.rollback()


def test_describe_and_hide_take_exactly_what_they_name(engine: sa.Engine) -> None:
    a, b = _seed(engine)
    with engine.begin() as conn:
        rows.describe(conn, "ns", "a", "DB_TABLE", "warehouse.a")
        rows.hide_namespace(conn, "other")
    assert _get(engine, a, "type", "physical_name", "is_hidden") == (
        "DB_TABLE",
        "warehouse.a",
        False,
    )
    assert _get(engine, b, "is_hidden") == (True,)
    with engine.begin() as conn:
        rows.hide(conn, a)
    assert _get(engine, a, "is_hidden") == (True,)
    with pytest.raises(AttributeError):
        rows.relation("d").update()  # type: ignore[attr-defined]
