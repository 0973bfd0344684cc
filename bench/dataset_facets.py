"""A dataset's page of reads on a store of 750,000 runs: what its readers said costs what
they said, not how many read it.

The store is ``bench/runs_list.py``'s (runs of 20 jobs, 80 % of them one hot job's; each
job's runs all read its one source version), bulk-loaded. Then 1,000 runs of another job
are given inputFacets (``dataQualityAssertions``) about their source, filed as the fold
files them (``run_input_facets``). Each request goes to a real uvicorn server over a
keep-alive connection:

- ``in-000``, read by the hot job's ~600,000 runs, which said nothing of it;
- ``in-001``, read by ~7,900 runs, 1,000 of which sent assertions (the newest 20 count);
- ``out-001``, a dataset no run reads: the baseline.

Each as a dataset (``GET …/datasets/{name}``), reported as a ratio to the baseline
(≈ 1: a dataset's readers cost nothing to show), and as its version list
(``GET …/datasets/{name}/versions?limit=20``; the baseline's 20 versions each carry the
run that made it, so only the sources' lists are comparable).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from _common import parser, print_table, summary, time_requests, write_json

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests")]

SAID = 1000
DATASETS = {"in-000": "hot source", "in-001": "source with assertions", "out-001": "baseline"}


def _said_about(engine: Any, dataset: str, readers: int) -> None:
    """``readers`` of ``dataset``'s version send assertions about it, as the fold files
    a run's inputFacets."""
    import sqlalchemy as sa

    from strata import ids
    from strata.store import schema as s

    version = ids.initial_version_uuid(ids.dataset_uuid("bench", dataset))
    ri, r = s.run_inputs, s.runs
    with engine.begin() as conn:
        found = conn.execute(
            sa.select(ri.c.run_uuid, r.c.updated_at)
            .join(r, r.c.uuid == ri.c.run_uuid)
            .where(ri.c.dataset_version_uuid == version)
            .limit(readers)
        ).all()
        said = {"assertions": [{"assertion": "not_null", "success": True, "column": "id"}]}
        rows = [
            {
                "run_uuid": run,
                "dataset_version_uuid": version,
                "facets": {"dataQualityAssertions": said},
                "sent_at": at,
            }
            for run, at in found
        ]
        conn.execute(s.run_input_facets.insert(), rows)


def measure(backend: str, runs: int, rounds: int) -> dict[str, Any]:
    import httpx

    from live_server import serving
    from runs_list import open_store, populate
    from strata.api import create_app
    from strata.settings import Settings

    with open_store(backend) as (engine, url):
        print(f"loading {runs:,} runs on {backend} ...", flush=True)
        populate(engine, runs, 20, 0.8, seed=7)
        _said_about(engine, "in-001", SAID)
        app = create_app(Settings(database_url=url, lineage_fold="thread"), engine)
        paths = {
            f"{name} {kind}": f"/namespaces/bench/datasets/{name}{suffix}"
            for name in DATASETS
            for kind, suffix in (("dataset", ""), ("versions", "/versions?limit=20"))
        }
        with serving(app) as base, httpx.Client(base_url=f"{base}/api/v1", timeout=60) as c:
            times, bodies = time_requests(c, paths, rounds)
    facets = {label: _shows_assertions(body) for label, body in bodies.items()}
    if not (facets["in-001 dataset"] and facets["in-001 versions"]):
        raise SystemExit("in-001 does not show its readers' assertions: the bench is broken")
    return {
        "backend": backend,
        "runs": runs,
        "ms": {k: summary(v) for k, v in times.items()},
        "shows_assertions": facets,
    }


def _shows_assertions(body: dict[str, Any]) -> bool:
    shown = body["versions"][0] if "versions" in body else body
    return "dataQualityAssertions" in shown["facets"]


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--runs", type=int, default=750_000)
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args()
    out = []
    for backend in ("sqlite", "postgresql") if a.backend == "both" else (a.backend,):
        res = measure(backend, a.runs, a.rounds)
        out.append(res)
        ms = res["ms"]
        rows = []
        for name, what in DATASETS.items():
            for kind in ("dataset", "versions"):
                s, base = ms[f"{name} {kind}"], ms["out-001 dataset"]
                ratio = s["p50"] / base["p50"] if kind == "dataset" else "—"
                rows.append([f"{name} {kind}", what, s["p50"], s["p95"], ratio])
        print_table(
            f"a dataset's reads, {backend}, {a.runs:,} runs (ms)",
            ["request", "dataset", "p50", "p95", "p50 / baseline"],
            rows,
        )
    write_json("dataset_facets", a.json, vars(a), out)


if __name__ == "__main__":
    main()
