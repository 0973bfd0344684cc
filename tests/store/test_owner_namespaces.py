"""The namespaces owner's contract, on every backend: made once, described, widened by
the events that name them in any order, paged, and hidden."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from strata.store.owners import namespaces

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _day(n: int) -> datetime:
    return AT + timedelta(days=n)


def test_a_namespace_is_made_once_then_described(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        namespaces.ensure(conn, "lake", AT)
        namespaces.ensure(conn, "lake", _day(1), owner="someone")  # exists: unchanged
        namespaces.ensure(conn, "default", AT, owner="anonymous", description="the default")
        namespaces.upsert(conn, "wh", "team-a", "the warehouse", _day(2))
        namespaces.upsert(conn, "wh", None, None, _day(3))
    with engine.connect() as conn:
        lake = namespaces.get(conn, "lake")
        default = namespaces.get(conn, "default")
        wh = namespaces.get(conn, "wh")
        page, total = namespaces.page(conn, limit=2, offset=1)
        assert namespaces.get(conn, "nothing") is None
    assert lake is not None and (lake.owner, lake.updated_at, lake.is_hidden) == (None, AT, False)
    assert default is not None and default.description == "the default"
    assert wh is not None and (wh.owner, wh.description) == ("anonymous", None)
    assert (wh.created_at, wh.updated_at) == (_day(2), _day(3))
    assert total == 3 and [n.name for n in page] == ["lake", "wh"]


def test_events_widen_namespaces_in_any_order(engine: sa.Engine) -> None:
    spans = [
        {"a": (_day(3), _day(4)), "b": (_day(1), _day(1))},
        {"a": (_day(1), _day(2)), "b": (_day(5), _day(6))},
        {"a": (_day(2), _day(9))},
    ]
    for order in (spans, list(reversed(spans))):
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM namespaces"))
            for span in order:
                namespaces.touch(conn, span)
            namespaces.touch(conn, {})
        with engine.connect() as conn:
            a, b = namespaces.get(conn, "a"), namespaces.get(conn, "b")
        assert a is not None and (a.created_at, a.updated_at, a.owner) == (
            _day(1),
            _day(9),
            "anonymous",
        )
        assert b is not None and (b.created_at, b.updated_at) == (_day(1), _day(6))


def test_a_hidden_namespace_is_still_read(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        namespaces.ensure(conn, "old", AT)
        namespaces.ensure(conn, "kept", AT)
        namespaces.hide(conn, "old")
    with engine.connect() as conn:
        old, kept = namespaces.get(conn, "old"), namespaces.get(conn, "kept")
        _, total = namespaces.page(conn, 10, 0)
    assert old is not None and old.is_hidden
    assert kept is not None and not kept.is_hidden
    assert total == 2
