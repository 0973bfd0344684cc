"""The sources owner's contract, on every backend: made once, described, widened by the
events that name them (the latest URL wins), and counted over time."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from strata.store.owners import sources

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _day(n: int) -> datetime:
    return AT + timedelta(days=n)


def test_a_source_is_made_once_then_described(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        sources.ensure(conn, "default", "POSTGRESQL", "", AT)
        sources.ensure(conn, "default", "KAFKA", "kafka://x", _day(1))  # exists: unchanged
        sources.upsert(conn, "wh", "POSTGRESQL", "postgres://wh", "the warehouse", _day(2))
        sources.upsert(conn, "wh", "POSTGRESQL", "postgres://wh2", None, _day(3))
    with engine.connect() as conn:
        default = sources.get(conn, "default")
        wh = sources.get(conn, "wh")
        page, total = sources.page(conn, limit=1, offset=1)
        assert sources.get(conn, "nothing") is None
    assert default is not None and (default.type, default.connection_url) == ("POSTGRESQL", "")
    assert wh is not None and (wh.connection_url, wh.description) == ("postgres://wh2", None)
    assert (wh.created_at, wh.updated_at) == (_day(2), _day(3))
    assert total == 2 and [x.name for x in page] == ["wh"]


def test_events_widen_a_source_and_the_latest_url_wins_in_any_order(engine: sa.Engine) -> None:
    seen = [
        (_day(5), "s3://b"),
        (_day(1), "s3://a"),
        (_day(5), "s3://c"),  # the same time as b: the larger URL wins
        (_day(3), "gs://old"),
        (_day(9), None),  # names no URL: widens the times only
        (_day(2), "s3://c"),  # c said again, earlier: c's time stays the later one
    ]
    # 60 of the 720 orders, the same each run, and the one that once kept b: the URL-less
    # event first made every later URL look older than the times it had widened.
    orders = random.Random(7).sample(list(itertools.permutations(seen)), 60)
    orders.append((seen[1], seen[4], seen[3], seen[0], seen[2], seen[5]))
    for order in orders:
        with engine.begin() as conn:
            conn.execute(sa.text("DELETE FROM sources"))
            for at, uri in order:
                sources.touch(conn, "lake", uri, at)
        with engine.connect() as conn:
            found = sources.get(conn, "lake")
        assert found is not None, order
        assert (found.created_at, found.updated_at) == (_day(1), _day(9)), order
        assert (found.connection_url, found.type) == ("s3://c", "S3"), order


def test_counts_before_each_end(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for i in range(4):
            sources.touch(conn, f"s{i}", None, _day(i))
    with engine.connect() as conn:
        assert sources.counts_before(conn, [_day(0), _day(2), _day(10)]) == [0, 2, 4]
        found = sources.get(conn, "s0")
    assert found is not None and found.type == "DB"
