"""The dashboard's and the "what changed" page's requests on a store of 750,000 runs.

The store is ``bench/runs_list.py``'s (runs of 20 jobs spread over 2024, most of them one
hot job's), bulk-loaded. Each request goes to a real uvicorn server over a keep-alive
connection, as the page sends it:

- ``/strata/summary?hours=24`` and ``?hours=168``: the dashboard's windows (the runs
  are spread over the year up to now: about 2,000 and 14,000 runs);
- ``/strata/summary`` over the whole year (every run counted by state);
- ``/strata/changes`` of the last week and of the whole year (every run and version);
- ``/stats/lineage-events?period=DAY`` and the three totals the dashboard also asks.

Target: the dashboard answers within 500 ms (its slowest request, at p95). The
dashboard asks for the last 24 hours or 7 days; the whole-year requests are measured
to show what a year-long range costs, not counted against the target.
"""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import parser, print_table, summary, time_requests, write_json

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

TARGET_MS = 500.0
# What the dashboard page itself asks, in either of its windows.
DASHBOARD = {
    "summary, 24 h",
    "summary, 7 days",
    "events per hour",
    "datasets total",
    "jobs total",
}


def requests_to_time(epoch: datetime) -> dict[str, str]:
    now = datetime.now(UTC)
    whole = math.ceil((now - epoch).total_seconds() / 3600) + 1

    def span(since: datetime) -> str:
        return f"since={since.isoformat()}&until={now.isoformat()}".replace("+", "%2B")

    return {
        "summary, 24 h": "/strata/summary?hours=24",
        "summary, 7 days": "/strata/summary?hours=168",
        "summary, whole year": f"/strata/summary?hours={whole}",
        "changes, last week": f"/strata/changes?{span(now - timedelta(days=7))}",
        "changes, whole year": f"/strata/changes?{span(epoch - timedelta(days=1))}",
        "events per hour": "/stats/lineage-events?period=DAY",
        "datasets total": "/stats/datasets?period=DAY",
        "jobs total": "/stats/jobs?period=DAY",
    }


def measure(backend: str, runs: int, rounds: int) -> dict[str, Any]:
    import httpx

    import runs_list
    from live_server import serving
    from runs_list import open_store, populate
    from strata.api import create_app
    from strata.settings import Settings

    with open_store(backend) as (engine, url):
        print(f"loading {runs:,} runs on {backend} ...", flush=True)
        # The year of runs ends now, so the dashboard's windows find the latest of them.
        epoch = datetime.now(UTC) - timedelta(days=364)
        runs_list.EPOCH = epoch
        populate(engine, runs, 20, 0.8, seed=7)
        app = create_app(Settings(database_url=url, lineage_fold="thread"), engine)
        paths = requests_to_time(epoch)
        with serving(app) as base, httpx.Client(base_url=f"{base}/api/v1", timeout=60) as c:
            times, bodies = time_requests(c, paths, rounds)  # two rounds warm the caches
    return {
        "backend": backend,
        "runs": runs,
        "ms": {k: summary(v) for k, v in times.items()},
        "found": {k: _size(body) for k, body in bodies.items()},
    }


def _size(body: Any) -> str:
    if isinstance(body, dict) and "runs" in body:
        runs = body["runs"]
        return f"{runs if isinstance(runs, int) else runs['total']:,} runs"
    return f"{len(body)} buckets" if isinstance(body, list) else ""


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--runs", type=int, default=750_000)
    p.add_argument("--rounds", type=int, default=10)
    a = p.parse_args()
    out = []
    for backend in ("sqlite", "postgresql") if a.backend == "both" else (a.backend,):
        res = measure(backend, a.runs, a.rounds)
        out.append(res)
        rows = [
            [label, res["found"][label], s["p50"], s["p95"], s["max"]]
            for label, s in res["ms"].items()
        ]
        print_table(
            f"dashboard requests, {backend}, {a.runs:,} runs (ms)",
            ["request", "found", "p50", "p95", "max"],
            rows,
        )
        worst = max(s["p95"] for k, s in res["ms"].items() if k in DASHBOARD)
        res["target_met"] = worst <= TARGET_MS
        verdict = "met" if res["target_met"] else "MISSED"
        print(
            f"target: each of the dashboard's requests within {TARGET_MS:.0f} ms at p95: {verdict}"
        )
    write_json("dashboard", a.json, vars(a), out)


if __name__ == "__main__":
    main()
