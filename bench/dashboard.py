"""The dashboard's and the "what changed" page's requests on a store of 750,000 runs.

The store is ``bench/runs_list.py``'s (runs of 20 jobs spread over 2024, most of them one
hot job's), bulk-loaded. Each request goes to a real uvicorn server over a keep-alive
connection, as the page sends it:

- ``/strata/summary?hours=24`` and ``?hours=168``: the dashboard's windows (the store's
  runs are in 2024, so these find none: the index range alone);
- ``/strata/summary`` over the whole store (every run counted by state);
- ``/strata/changes`` of one week of 2024 (about 14,000 runs and their versions);
- ``/stats/lineage-events?period=DAY`` and the three totals the dashboard also asks.

Target: the dashboard answers within 500 ms (its slowest request, at p95).
"""

from __future__ import annotations

import math
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import parser, print_table, summary, write_json

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

TARGET_MS = 500.0


def requests_to_time(epoch: datetime) -> dict[str, str]:
    whole = math.ceil((datetime.now(UTC) - epoch).total_seconds() / 3600) + 1
    week = epoch + timedelta(days=180)
    span = f"since={week.isoformat()}&until={(week + timedelta(days=7)).isoformat()}"
    return {
        "summary, 24 h": "/strata/summary?hours=24",
        "summary, 7 days": "/strata/summary?hours=168",
        "summary, whole store": f"/strata/summary?hours={min(whole, 24 * 366)}",
        "changes, one week": f"/strata/changes?{span.replace('+', '%2B')}",
        "events per hour": "/stats/lineage-events?period=DAY",
        "datasets total": "/stats/datasets?period=DAY",
        "jobs total": "/stats/jobs?period=DAY",
    }


def measure(backend: str, runs: int, rounds: int) -> dict[str, Any]:
    import httpx

    from live_server import serving
    from runs_list import EPOCH, open_store, populate
    from strata.api import create_app
    from strata.settings import Settings

    with open_store(backend) as (engine, url):
        print(f"loading {runs:,} runs on {backend} ...", flush=True)
        populate(engine, runs, 20, 0.8, seed=7)
        app = create_app(Settings(database_url=url, lineage_fold="thread"), engine)
        paths = requests_to_time(EPOCH)
        times: dict[str, list[float]] = {k: [] for k in paths}
        counted: dict[str, Any] = {}
        with serving(app) as base, httpx.Client(base_url=f"{base}/api/v1", timeout=60) as c:
            for r in range(rounds + 2):
                for label, path in paths.items():
                    t0 = time.perf_counter()
                    answer = c.get(path)
                    took = (time.perf_counter() - t0) * 1000
                    answer.raise_for_status()
                    if r >= 2:  # two rounds warm the caches
                        times[label].append(took)
                    counted[label] = _size(answer.json())
    return {
        "backend": backend,
        "runs": runs,
        "ms": {k: summary(v) for k, v in times.items()},
        "found": counted,
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
        worst = max(s["p95"] for s in res["ms"].values())
        res["target_met"] = worst <= TARGET_MS
        verdict = "met" if res["target_met"] else "MISSED"
        print(f"target: every dashboard request within {TARGET_MS:.0f} ms at p95: {verdict}")
    write_json("dashboard", a.json, vars(a), out)


if __name__ == "__main__":
    main()
