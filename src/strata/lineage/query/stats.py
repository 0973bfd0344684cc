"""Marquez's stats: lineage events by type and running totals of jobs, datasets, sources.

``DAY`` is the last 24 hours in whole UTC hours, the current hour last; ``WEEK`` is the
last 7 days in whole days of a time zone, today last. Each interval is counted live, in
one query: Marquez reads an hourly materialized view refreshed on a schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import bulk
from strata.store.owners import events as stored_events
from strata.store.owners import sources
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.jobs import rows as job_rows

_DATASETS = dataset_rows.relation()

Period = Literal["DAY", "WEEK"]
EVENT_TYPES = ("FAIL", "START", "COMPLETE", "ABORT")


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime


@dataclass(frozen=True)
class LineageMetric:
    interval: Interval
    counts: dict[str, int]  # by event type: FAIL, START, COMPLETE, ABORT


@dataclass(frozen=True)
class IntervalMetric:
    interval: Interval
    count: int


def intervals(period: Period, zone: ZoneInfo | None, now: datetime) -> list[Interval]:
    """The intervals of ``period`` ending with the one that holds ``now``, oldest first."""
    if period == "DAY":
        hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        return [
            Interval(hour - timedelta(hours=h), hour - timedelta(hours=h - 1))
            for h in range(23, -1, -1)
        ]
    assert zone is not None
    today = now.astimezone(zone).date()

    def midnight(days_ago: int) -> datetime:
        # Local midnights, so a day across a DST change is 23 or 25 hours long.
        day = today - timedelta(days=days_ago)
        return datetime.combine(day, time(), tzinfo=zone).astimezone(UTC)

    return [Interval(midnight(d), midnight(d - 1)) for d in range(6, -1, -1)]


def _bucket(column: sa.ColumnElement[datetime], spans: list[Interval]) -> sa.Case[int]:
    return sa.case(*[(column < iv.end, i) for i, iv in enumerate(spans)])


def lineage_events(conn: Connection, spans: list[Interval]) -> list[LineageMetric]:
    """Events per interval and type, by event time (``ix_lineage_events_time``)."""
    ends = [iv.end for iv in spans]
    counts = stored_events.counts_by_type(conn, spans[0].start, ends, EVENT_TYPES)
    return [LineageMetric(iv, c) for iv, c in zip(spans, counts, strict=True)]


TOTALS = {"jobs": job_rows.relation(), "datasets": _DATASETS}


def running_totals(
    conn: Connection, what: Literal["jobs", "datasets", "sources"], spans: list[Interval]
) -> list[IntervalMetric]:
    """How many rows existed at the end of each interval (hidden ones included, as in
    Marquez), in one pass over the table."""
    ends = [iv.end for iv in spans]
    if what == "sources":
        counts = sources.counts_before(conn, ends)
    else:
        counts = bulk.counts_created_before(conn, TOTALS[what], ends)
    return [IntervalMetric(iv, n) for iv, n in zip(spans, counts, strict=True)]
