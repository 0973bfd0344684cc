"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp.

    SQLite has no time zones, so values are stored as naive UTC there and
    given their zone back on the way out; PostgreSQL stores ``timestamptz``.
    Naive datetimes are refused on the way in: their meaning is ambiguous.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: pass a timezone-aware value")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def bind_processor(self, dialect: Dialect) -> Any:
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        # SQLite: the text SQLAlchemy's DATETIME writes ("2024-01-31 12:00:00.000000", the
        # form every stored time has, compared as text in SQL), made in one C call instead
        # of a process_bind_param, then a %-format of seven fields: times are most of the
        # values lineage ingest writes.
        def process(value: datetime | None) -> str | None:
            if value is None:
                return None
            if value.tzinfo is UTC:  # the usual case: "…20.000000+00:00" less its zone
                return value.isoformat(" ", "microseconds")[:26]
            if value.tzinfo is None:
                raise ValueError(f"naive datetime {value!r}: pass a timezone-aware value")
            return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")

        return process

    def result_processor(self, dialect: Dialect, coltype: Any) -> Any:
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)

        def process(value: str | None) -> datetime | None:
            if value is None:
                return None
            return datetime.fromisoformat(value).replace(tzinfo=UTC)

        return process

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):  # raw SQLite text, e.g. from a textual query
            value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]


def uuid_col(name: str, *args: Any, **kwargs: Any) -> sa.Column[str]:
    """A UUID kept as its 36-character canonical string (portable, readable)."""
    return sa.Column(name, sa.String(36), *args, **kwargs)


def serial_col(name: str) -> sa.Column[int]:
    """An auto-numbered primary key: BIGINT on PostgreSQL; INTEGER on SQLite, where only
    an ``INTEGER PRIMARY KEY`` numbers itself."""
    return sa.Column(
        name,
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        primary_key=True,
        autoincrement=True,
    )


def ts_col(name: str, *args: Any, **kwargs: Any) -> sa.Column[datetime]:
    return sa.Column(name, UTCDateTime(), *args, **kwargs)


JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

# A document kept as the text it was stored as (PostgreSQL ``json``, which checks the text
# and keeps it; ``jsonb`` parses it into a tree): for raw events, written once, read whole,
# and never queried into on the way (parsing a 2.5 kB event into jsonb cost the fold as
# much as the rest of its insert).
JSONTextType = sa.JSON().with_variant(postgresql.JSON(), "postgresql")
