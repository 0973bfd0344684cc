"""Marquez's stats routes: lineage events by type, running totals of jobs, datasets, sources."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, available_timezones

from fastapi import APIRouter, Query

from strata.api import views
from strata.api.deps import Conn
from strata.errors import InvalidArgument
from strata.lineage.query import stats

router = APIRouter(prefix="/stats", tags=["Stats"])

PeriodParam = Annotated[
    str,
    Query(
        max_length=16,
        description="DAY (24 hours) or WEEK (7 days), any case",
        json_schema_extra={"pattern": "^([Dd][Aa][Yy]|[Ww][Ee][Ee][Kk])$"},
    ),
]
# The zones this server's time zone database knows: the document lists them, so what a
# client may send is what the server takes.
ZONES = sorted(available_timezones())
ZoneParam = Annotated[
    str | None,
    Query(
        max_length=64,
        description="IANA time zone of the WEEK days, e.g. Europe/Paris (default UTC)",
        json_schema_extra={"enum": ZONES},
    ),
]


def _spans(period: str, timezone: str | None) -> list[stats.Interval]:
    value = period.upper()
    if value not in ("DAY", "WEEK"):
        raise InvalidArgument(
            f"period must be DAY or WEEK, got {period!r}", field="period", value=period
        )
    if timezone is not None and timezone not in _KNOWN:
        raise InvalidArgument(
            f"unknown time zone {timezone!r}; use an IANA name such as Europe/Paris or UTC",
            field="timezone",
            value=timezone,
        )
    zone = ZoneInfo(timezone or "UTC") if value == "WEEK" else None
    return stats.intervals("DAY" if value == "DAY" else "WEEK", zone, datetime.now(UTC))


_KNOWN = frozenset(ZONES)


def _interval(iv: stats.Interval) -> dict[str, Any]:
    return {"startInterval": views.ts(iv.start), "endInterval": views.ts(iv.end)}


@router.get("/lineage-events")
def lineage_events(
    conn: Conn, period: PeriodParam, timezone: ZoneParam = None
) -> list[dict[str, Any]]:
    """Lineage events per hour (DAY) or day (WEEK), by event type."""
    return [
        {
            **_interval(m.interval),
            "fail": m.counts["FAIL"],
            "start": m.counts["START"],
            "complete": m.counts["COMPLETE"],
            "abort": m.counts["ABORT"],
        }
        for m in stats.lineage_events(conn, _spans(period, timezone))
    ]


def _totals(
    conn: Conn, what: Literal["jobs", "datasets", "sources"], period: str, tz: str | None
) -> list[dict[str, Any]]:
    return [
        {**_interval(m.interval), "count": m.count}
        for m in stats.running_totals(conn, what, _spans(period, tz))
    ]


@router.get("/jobs")
def jobs(conn: Conn, period: PeriodParam, timezone: ZoneParam = None) -> list[dict[str, Any]]:
    """How many jobs existed at the end of each hour (DAY) or day (WEEK)."""
    return _totals(conn, "jobs", period, timezone)


@router.get("/datasets")
def datasets(conn: Conn, period: PeriodParam, timezone: ZoneParam = None) -> list[dict[str, Any]]:
    """How many datasets existed at the end of each hour (DAY) or day (WEEK)."""
    return _totals(conn, "datasets", period, timezone)


@router.get("/sources")
def sources(conn: Conn, period: PeriodParam, timezone: ZoneParam = None) -> list[dict[str, Any]]:
    """How many sources existed at the end of each hour (DAY) or day (WEEK)."""
    return _totals(conn, "sources", period, timezone)
