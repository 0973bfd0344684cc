"""UTCDateTime: aware UTC times on both backends; on SQLite the same text SQLAlchemy writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

from strata.store import schema as s
from strata.store.types import UTCDateTime

TIMES = [
    datetime(2024, 6, 1, tzinfo=UTC),
    datetime(1, 1, 1, tzinfo=UTC),
    datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2024, 6, 1, 5, 4, 3, 21, tzinfo=timezone(timedelta(hours=-7, minutes=-30))),
]


class _Generic(UTCDateTime):
    """UTCDateTime with SQLAlchemy's own processors (process_*_value around DATETIME)."""

    bind_processor = sa.types.TypeDecorator.bind_processor  # type: ignore[assignment]
    result_processor = sa.types.TypeDecorator.result_processor  # type: ignore[assignment]


@pytest.mark.parametrize("value", TIMES)
def test_sqlite_text_is_what_sqlalchemy_writes(value: datetime) -> None:
    dialect = sqlite.dialect()
    fast = UTCDateTime()._cached_bind_processor(dialect)
    generic = _Generic()._cached_bind_processor(dialect)
    assert fast is not None and generic is not None
    text = fast(value)
    assert text == generic(value)
    read = UTCDateTime()._cached_result_processor(dialect, None)
    assert read is not None
    assert read(text) == value and read(text).tzinfo is UTC
    assert read("2024-06-01 00:00:20") == datetime(2024, 6, 1, 0, 0, 20, tzinfo=UTC)


def test_naive_times_are_refused_on_sqlite() -> None:
    fast = UTCDateTime()._cached_bind_processor(sqlite.dialect())
    assert fast is not None
    with pytest.raises(ValueError, match="naive datetime"):
        fast(datetime(2024, 1, 1))


def test_times_round_trip_on_the_backend(engine: sa.Engine) -> None:
    ns = s.namespaces
    with engine.begin() as conn:
        for i, at in enumerate(TIMES):
            conn.execute(ns.insert(), {"name": f"n{i}", "created_at": at, "updated_at": at})
        rows = conn.execute(sa.select(ns.c.name, ns.c.created_at).order_by(ns.c.created_at))
        got = dict(rows.all())
        later = conn.execute(
            sa.select(sa.func.count()).where(ns.c.created_at > TIMES[0] - timedelta(hours=1))
        ).scalar_one()
    assert got == {f"n{i}": at for i, at in enumerate(TIMES)}
    assert all(t.tzinfo is not None for t in got.values())
    assert later == 2  # text order is time order on SQLite
