"""A seeded, synthetic clickstream for the experiments example.

Three marketplace regions, each with its own customers, time zone and day/night rhythm.
Each hour brings sessions of a few clicks each, over five pages with their own latency;
customers in bucket B of a running experiment behave a little differently, so the
metrics have an effect to find. About 3 % of events arrive one or two hours late, a few
are delivered twice (beacon retries) and a few carry no latency (dropped timings).

Everything is a function of ``(seed, hour)``: the same hour always gives the same rows,
so a batch can be generated again, late events included, at any time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa


@dataclass(frozen=True)
class Region:
    code: str
    zone: str
    customers: int
    sessions_per_hour: int  # at the evening peak


REGIONS = (
    Region("US", "America/New_York", 3_000, 420),
    Region("UK", "Europe/London", 1_500, 220),
    Region("JP", "Asia/Tokyo", 1_200, 180),
)
PAGES = ("/home", "/search", "/product", "/cart", "/checkout")
PAGE_WEIGHTS = (0.30, 0.25, 0.28, 0.10, 0.07)
PAGE_LATENCY_MS = (120.0, 260.0, 180.0, 210.0, 420.0)  # median per page


@dataclass(frozen=True)
class Experiment:
    experiment_id: str
    description: str
    regions: tuple[str, ...]
    start_offset_days: int  # from the first day of the data
    length_days: int | None
    click_lift: float  # bucket B's extra clicks per session
    checkout_speedup: float  # bucket B's checkout latency factor


EXPERIMENTS = (
    Experiment("checkout-v2", "one-page checkout", ("US", "UK"), -2, 14, 0.10, 0.80),
    Experiment("search-ranking", "learned search ranking", ("US", "UK", "JP"), 0, None, 0.05, 1.0),
    Experiment("jp-banner", "seasonal banner", ("JP",), -6, 8, 0.08, 1.0),
)
LATE_SHARE = 0.03
DUPLICATE_SHARE = 0.005
MISSING_LATENCY_SHARE = 0.01

SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("region", pa.string()),
        ("customer_id", pa.string()),
        ("session_id", pa.string()),
        ("event_time", pa.timestamp("us", tz="UTC")),
        ("page", pa.string()),
        ("latency_ms", pa.int32()),
    ]
)


def bucket(experiment_id: str, customer_id: str) -> str:
    """A customer's bucket in an experiment: the pipeline computes the same in Spark from
    the MD5 of ``experiment_id:customer_id``."""
    digest = hashlib.md5(f"{experiment_id}:{customer_id}".encode()).hexdigest()
    return "B" if int(digest[:8], 16) % 2 else "A"


def experiments_table(first_day: date) -> pa.Table:
    """The experiments with their regions and active days (end day inclusive, or open)."""
    rows: dict[str, list[Any]] = {
        "experiment_id": [],
        "description": [],
        "regions": [],
        "start_day": [],
        "end_day": [],
    }
    for e in EXPERIMENTS:
        start = first_day + timedelta(days=e.start_offset_days)
        rows["experiment_id"].append(e.experiment_id)
        rows["description"].append(e.description)
        rows["regions"].append(list(e.regions))
        rows["start_day"].append(start)
        end = None if e.length_days is None else start + timedelta(days=e.length_days - 1)
        rows["end_day"].append(end)
    schema = pa.schema(
        [
            ("experiment_id", pa.string()),
            ("description", pa.string()),
            ("regions", pa.list_(pa.string())),
            ("start_day", pa.date32()),
            ("end_day", pa.date32()),
        ]
    )
    return pa.table(rows, schema=schema)


def batch(hour: datetime, seed: int, first_hour: datetime | None = None) -> pa.Table:
    """What arrives in the lake at the end of ``hour``: its on-time events and the late
    events of the two hours before (none from before ``first_hour``)."""
    parts = []
    for delay in (0, 1, 2):
        source = hour - timedelta(hours=delay)
        if first_hour is not None and source < first_hour:
            continue
        events, delays = _hour_events(source, seed)
        parts.append(events.filter(pa.array(delays == delay)))
    return pa.concat_tables(parts)


def late_events(hour: datetime, seed: int, tag: str, share: float = 0.1) -> pa.Table:
    """A backlog from ``hour`` found on a collector and replayed: ``share`` of the hour's
    volume as new events, their ids marked with ``tag`` (one tag per replay)."""
    events, _ = _hour_events(hour, seed)
    picked = events.slice(0, max(1, int(events.num_rows * share)))
    ids = pa.array([f"{e}-{tag}" for e in picked.column("event_id").to_pylist()], pa.string())
    return picked.set_column(0, "event_id", ids)


def _hour_events(hour: datetime, seed: int) -> tuple[pa.Table, np.ndarray[Any, Any]]:
    """Every event that happened in ``hour`` (UTC) and the hours late it arrives."""
    hour = hour.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    rng = np.random.default_rng([seed, int(hour.timestamp()) // 3600])
    columns: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for region in REGIONS:
        _region_hour(rng, region, hour, columns)
    table = pa.table(columns, schema=SCHEMA)
    n = table.num_rows
    again = np.flatnonzero(rng.random(n) < DUPLICATE_SHARE)
    if len(again):
        table = pa.concat_tables([table, table.take(pa.array(again))])
    late = rng.random(table.num_rows) < LATE_SHARE
    delays = np.where(late, rng.integers(1, 3, table.num_rows), 0)
    return table, delays


def _region_hour(
    rng: np.random.Generator, region: Region, hour: datetime, out: dict[str, list[Any]]
) -> None:
    """One region's sessions in one hour, appended to ``out``'s columns."""
    local_hour = hour.astimezone(ZoneInfo(region.zone)).hour
    # Quiet before dawn, busiest in the evening.
    rhythm = 0.55 + 0.45 * np.cos((local_hour - 20) / 24 * 2 * np.pi)
    sessions = rng.poisson(region.sessions_per_hour * rhythm)
    # A fifth of sessions come from the heaviest twentieth of customers.
    heavy = rng.random(sessions) < 0.2
    who = np.where(
        heavy,
        rng.integers(0, region.customers // 20, sessions),
        rng.integers(0, region.customers, sessions),
    )
    stamp = hour.strftime("%Y%m%d%H")
    for s in range(sessions):
        customer = f"{region.code.lower()}-{int(who[s]):05d}"
        _session(rng, region, hour, customer, f"{region.code}-{stamp}-{s}", out)


def _session(
    rng: np.random.Generator,
    region: Region,
    hour: datetime,
    customer: str,
    session: str,
    out: dict[str, list[Any]],
) -> None:
    """The clicks of one session: page, time within the hour and latency for each. Bucket
    B's behaviour does not depend on the day: the metrics count active days only."""
    running = [
        e
        for e in EXPERIMENTS
        if region.code in e.regions and bucket(e.experiment_id, customer) == "B"
    ]
    lift = 1.0 + sum(e.click_lift for e in running)
    clicks = 1 + rng.geometric(0.3 / lift)
    start = rng.integers(0, 3600 - 60)
    offsets = np.sort(np.minimum(start + rng.exponential(40.0, clicks).cumsum(), 3599))
    pages = rng.choice(len(PAGES), clicks, p=PAGE_WEIGHTS)
    speedup = min((e.checkout_speedup for e in running), default=1.0)
    for i in range(clicks):
        median = PAGE_LATENCY_MS[pages[i]] * (speedup if PAGES[pages[i]] == "/checkout" else 1.0)
        dropped = rng.random() < MISSING_LATENCY_SHARE
        latency = None if dropped else int(median * rng.lognormal(0, 0.35))
        out["event_id"].append(f"{session}-{i}")
        out["region"].append(region.code)
        out["customer_id"].append(customer)
        out["session_id"].append(session)
        out["event_time"].append(hour + timedelta(seconds=float(offsets[i])))
        out["page"].append(PAGES[pages[i]])
        out["latency_ms"].append(latency)
