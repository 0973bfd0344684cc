"""Marquez's stats routes: events by type per hour or day, running totals."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from api_seed import Seeder
from fastapi.testclient import TestClient

from strata.lineage.query import stats

P = "https://example.com/producer"
SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def post(client: TestClient, event_type: str, at: datetime, job: str = "etl") -> None:
    body: dict[str, Any] = {
        "eventType": event_type,
        "eventTime": iso(at),
        "run": {"runId": str(uuid.uuid4())},
        "job": {"namespace": "ns", "name": job},
        "inputs": [],
        "outputs": [{"namespace": "ns", "name": f"{job}_out"}],
        "producer": P,
        "schemaURL": SCHEMA,
    }
    r = client.post("/api/v1/lineage", json=body)
    assert r.status_code == 201, r.text


def get(client: TestClient, what: str, **params: str) -> list[dict[str, Any]]:
    r = client.get(f"/api/v1/stats/{what}", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body, list)
    return body


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def holding(body: list[dict[str, Any]], at: datetime) -> dict[str, Any]:
    """The interval holding ``at`` (the last one, unless the hour turned meanwhile)."""
    return next(b for b in body if parse(b["startInterval"]) <= at < parse(b["endInterval"]))


def test_day_intervals_are_the_last_24_hours() -> None:
    now = datetime(2024, 3, 10, 15, 42, 7, tzinfo=UTC)
    spans = stats.intervals("DAY", None, now)
    assert len(spans) == 24
    assert spans[-1] == stats.Interval(
        datetime(2024, 3, 10, 15, tzinfo=UTC), datetime(2024, 3, 10, 16, tzinfo=UTC)
    )
    assert spans[0].start == datetime(2024, 3, 9, 16, tzinfo=UTC)
    assert all(a.end == b.start for a, b in itertools.pairwise(spans))


def test_week_intervals_are_local_days_across_dst() -> None:
    zone = ZoneInfo("America/New_York")
    now = datetime(2024, 3, 12, 3, 0, tzinfo=UTC)  # 2024-03-11 23:00 in New York
    spans = stats.intervals("WEEK", zone, now)
    assert len(spans) == 7
    days = [s.start.astimezone(zone) for s in spans]
    assert [d.day for d in days] == [5, 6, 7, 8, 9, 10, 11]
    assert all((d.hour, d.minute) == (0, 0) for d in days)
    # 10 March 2024 lost an hour to daylight saving time.
    lengths = {s.start.astimezone(zone).day: s.end - s.start for s in spans}
    assert lengths[10] == timedelta(hours=23)
    assert lengths[9] == timedelta(hours=24)


def test_lineage_events_per_hour(client: TestClient) -> None:
    now = datetime.now(UTC)
    post(client, "START", now)
    post(client, "COMPLETE", now)
    post(client, "FAIL", now - timedelta(hours=2))
    post(client, "ABORT", now - timedelta(days=2))  # outside the day
    post(client, "RUNNING", now)  # not counted: Marquez counts four types
    body = get(client, "lineage-events", period="DAY")
    assert len(body) == 24
    assert set(body[0]) == {"startInterval", "endInterval", "fail", "start", "complete", "abort"}
    last = holding(body, now)
    assert last["startInterval"].endswith(":00:00Z")
    assert (last["start"], last["complete"], last["fail"], last["abort"]) == (1, 1, 0, 0)
    assert sum(b["fail"] for b in body) == 1
    assert sum(b["abort"] for b in body) == 0
    assert holding(body, now - timedelta(hours=2))["fail"] == 1


def test_lineage_events_per_day(client: TestClient) -> None:
    now = datetime.now(UTC)
    post(client, "COMPLETE", now)
    post(client, "COMPLETE", now - timedelta(days=3))
    post(client, "COMPLETE", now - timedelta(days=9))
    body = get(client, "lineage-events", period="WEEK", timezone="Asia/Tokyo")
    assert len(body) == 7
    tokyo = ZoneInfo("Asia/Tokyo")
    for b in body:
        start = parse(b["startInterval"]).astimezone(tokyo)
        assert (start.hour, start.minute) == (0, 0)
        assert parse(b["endInterval"]) - parse(b["startInterval"]) == timedelta(days=1)
    assert holding(body, now)["complete"] == 1
    assert sum(b["complete"] for b in body) == 2
    # Lower case works too (the Marquez web UI sends upper case).
    week = get(client, "lineage-events", period="week", timezone="UTC")
    assert holding(week, now)["complete"] == 1


def test_running_totals(client: TestClient, seed: Seeder) -> None:
    seed.job("ns", "old")  # created in 2024: counted everywhere
    seed.dataset("ns", "old_ds")
    now = datetime.now(UTC)
    post(client, "COMPLETE", now - timedelta(hours=5), job="recent")
    r = client.put("/api/v1/sources/db", json={"type": "POSTGRESQL", "connectionUrl": "pg://x"})
    assert r.status_code == 200, r.text
    jobs = get(client, "jobs", period="DAY")
    assert len(jobs) == 24
    assert set(jobs[0]) == {"startInterval", "endInterval", "count"}
    assert jobs[0]["count"] == 1
    assert jobs[-1]["count"] == 2
    assert [b["count"] for b in jobs] == sorted(b["count"] for b in jobs)
    datasets = get(client, "datasets", period="DAY")
    assert (datasets[0]["count"], datasets[-1]["count"]) == (1, 2)
    sources = get(client, "sources", period="WEEK", timezone="Europe/Paris")
    assert len(sources) == 7
    # db, and "default", which the server made when it started.
    assert (sources[0]["count"], sources[-1]["count"]) == (0, 2)
    # A deleted (hidden) job still counts, as in Marquez.
    assert client.delete("/api/v1/namespaces/ns/jobs/recent").status_code == 200
    assert get(client, "jobs", period="DAY")[-1]["count"] == 2


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"period": "MONTH"},
        {"period": ""},
        {"period": "WEEK", "timezone": ""},
        {"period": "WEEK", "timezone": "Mars/Olympus"},
        {"period": "WEEK", "timezone": "../../etc/passwd"},
        {"period": "WEEK", "timezone": "x" * 65},
    ],
)
@pytest.mark.parametrize("what", ["lineage-events", "jobs", "datasets", "sources"])
def test_bad_parameters_are_400(client: TestClient, what: str, params: dict[str, str]) -> None:
    r = client.get(f"/api/v1/stats/{what}", params=params)
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"code", "message", "details"}
    assert body["details"]["field"] in ("period", "timezone")


def test_weeks_without_a_zone_are_utc_weeks(client: TestClient) -> None:
    utc = get(client, "jobs", period="WEEK", timezone="UTC")
    assert get(client, "jobs", period="WEEK") == utc
