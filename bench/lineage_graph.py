"""Lineage graph with a large store: ``GET /api/v1/lineage?nodeId=dataset:ns:name&depth=20``.

The store is bulk-loaded straight into the schema tables with rows shaped as ingest writes
them. Jobs come in pipelines (connected components of 50-150 jobs); each job reads 1-2
datasets (raw sources of its pipeline or outputs of recent upstream jobs, so pipelines are
chains and trees) and writes 1-2 new ones. Every job has a current version with its
``job_version_io`` edges, one completed run with its states, input bindings and one output
version per written dataset, and every dataset a current version. Requests start from
datasets in the middle of pipelines, so a depth-20 walk covers a few hundred nodes; they go
through the ASGI app in process and, separately, to ``graph.lineage_graph`` alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import print_table, summary, write_json
from runs_list import (
    SCHEMA,
    analyze,
    bulk_insert,
    dataset_row,
    job_row,
    job_version_row,
    open_store,
    refresh_run_counts,
    uuid7_at,
)

TARGET_P95_MS = 100.0
NS = "warehouse"
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def layout(jobs: int, datasets: int, seed: int) -> dict[str, Any]:
    """Pipelines of jobs: (inputs, outputs) per job as dataset indexes, and dataset names."""
    rng = random.Random(seed)
    sizes: list[int] = []
    left = jobs
    while left > 0:
        k = min(left, rng.randint(50, 150))
        sizes.append(k)
        left -= k
    n_out = [rng.choice((1, 2)) for _ in range(jobs)]
    raw_total = datasets - sum(n_out)
    if raw_total < len(sizes):
        raise SystemExit("--datasets is too small for --jobs: every job writes 1-2 datasets")
    raw_per = [raw_total * k // jobs for k in sizes]
    raw_per[-1] += raw_total - sum(raw_per)
    names: list[str] = []
    job_io: list[tuple[list[int], list[int]]] = []
    mid: list[int] = []  # datasets written halfway down a pipeline: the query starts
    j = 0
    for p, (k, raw) in enumerate(zip(sizes, raw_per, strict=True)):
        raw_ids = list(range(len(names), len(names) + raw))
        names.extend(f"raw.p{p:04d}.src_{i:03d}" for i in range(raw))
        produced: list[int] = []
        for i in range(k):
            n_in = rng.choice((1, 2))
            ins: set[int] = set()
            while len(ins) < n_in:
                if produced and rng.random() < 0.85:
                    # Mostly the outputs of the last few jobs: chains with some fan-in.
                    ins.add(produced[-1 - min(len(produced) - 1, int(rng.expovariate(0.5)))])
                else:
                    ins.add(rng.choice(raw_ids) if raw_ids else produced[0])
            outs = list(range(len(names), len(names) + n_out[j]))
            names.extend(f"p{p:04d}.job_{i:03d}.out_{o}" for o in range(n_out[j]))
            produced.extend(outs)
            if i == k // 2:
                mid.append(outs[0])
            job_io.append((sorted(ins), outs))
            j += 1
    return {"names": names, "job_io": job_io, "pipelines": sizes, "mid": mid}


def populate(engine: Any, jobs: int, datasets: int, seed: int) -> dict[str, Any]:
    from strata import ids
    from strata.store import schema as s

    rng = random.Random(seed + 1)
    lay = layout(jobs, datasets, seed)
    names: list[str] = lay["names"]
    job_io: list[tuple[list[int], list[int]]] = lay["job_io"]
    ds_uuid = [ids.dataset_uuid(NS, n) for n in names]
    job_names = [f"etl.job_{i:06d}" for i in range(jobs)]
    job_uuid = [ids.job_uuid(NS, n) for n in job_names]
    start = [EPOCH + timedelta(seconds=60 * i + rng.randrange(30)) for i in range(jobs)]
    run_id = [uuid7_at(t, rng) for t in start]
    versions = [
        job_version_row(
            job_uuid[i],
            [(NS, names[d]) for d in job_io[i][0]],
            [(NS, names[d]) for d in job_io[i][1]],
            start[i],
        )
        for i in range(jobs)
    ]
    for i, v in enumerate(versions):
        v["latest_run_uuid"] = run_id[i]
        v["updated_at"] = start[i] + timedelta(seconds=30)
    # Current version of each dataset: its producer's output, or an initial one for sources.
    current: dict[int, str] = {}
    producer_of: dict[int, int] = {}
    for i, (_, outs) in enumerate(job_io):
        for d in outs:
            producer_of[d] = i
            current[d] = ids.output_version_uuid(run_id[i], ds_uuid[d])
    initial = {
        d: ids.initial_version_uuid(ds_uuid[d]) for d in range(len(names)) if d not in current
    }
    current.update(initial)

    t0 = time.perf_counter()
    bulk_insert(
        engine,
        s.namespaces,
        [
            {
                "name": NS,
                "owner": "anonymous",
                "description": None,
                "is_hidden": False,
                "created_at": EPOCH,
                "updated_at": EPOCH,
            }
        ],
    )
    bulk_insert(
        engine, s.datasets, (dataset_row(NS, n, EPOCH, current[d]) for d, n in enumerate(names))
    )
    bulk_insert(
        engine,
        s.jobs,
        (job_row(NS, job_names[i], start[i], versions[i]["uuid"]) for i in range(jobs)),
    )
    bulk_insert(engine, s.job_versions, versions)

    def io_rows() -> Iterator[dict[str, Any]]:
        for i, (ins, outs) in enumerate(job_io):
            for ds_list, io_type in ((ins, "INPUT"), (outs, "OUTPUT")):
                for d in ds_list:
                    yield {
                        "job_version_uuid": versions[i]["uuid"],
                        "dataset_uuid": ds_uuid[d],
                        "io_type": io_type,
                        "job_uuid": job_uuid[i],
                    }

    edges = bulk_insert(engine, s.job_version_io, io_rows())

    def run_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            end = start[i] + timedelta(seconds=30)
            yield {
                "uuid": run_id[i],
                "job_uuid": job_uuid[i],
                "job_version_uuid": versions[i]["uuid"],
                "parent_run_uuid": None,
                "state": "COMPLETED",
                "nominal_start_time": None,
                "nominal_end_time": None,
                "started_at": start[i],
                "ended_at": end,
                "transitioned_at": end,
                "created_at": start[i],
                "updated_at": end,
                "facets": {"processing_engine": {"name": "spark", "version": "3.5.1"}},
                "error": None,
            }

    def state_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            for state, at, tag in (
                ("RUNNING", start[i], "s"),
                ("COMPLETED", start[i] + timedelta(seconds=30), "c"),
            ):
                digest = f"{run_id[i]}{tag}"
                yield {
                    "uuid": ids.run_state_uuid(run_id[i], digest),
                    "run_uuid": run_id[i],
                    "state": state,
                    "transitioned_at": at,
                    "event_uuid": ids.event_uuid(digest),
                }

    def version_rows() -> Iterator[dict[str, Any]]:
        for d, v in current.items():
            p = producer_of.get(d)
            yield {
                "uuid": v,
                "dataset_uuid": ds_uuid[d],
                "created_at": EPOCH if p is None else start[p] + timedelta(seconds=30),
                "run_uuid": None if p is None else run_id[p],
                "schema_fields": SCHEMA,
                "facets": {},
                "lifecycle_state": None,
            }

    def input_rows() -> Iterator[dict[str, Any]]:
        for i, (ins, _) in enumerate(job_io):
            for d in ins:
                yield {"run_uuid": run_id[i], "dataset_version_uuid": current[d]}

    counts = {
        "jobs": jobs,
        "datasets": len(names),
        "job_version_io": edges,
        "runs": bulk_insert(engine, s.runs, run_rows()),
        "run_states": bulk_insert(engine, s.run_states, state_rows()),
        "dataset_versions": bulk_insert(engine, s.dataset_versions, version_rows()),
        "run_inputs": bulk_insert(engine, s.run_inputs, input_rows()),
    }
    refresh_run_counts(engine)
    analyze(engine)
    return {**lay, "rows": counts, "load_seconds": round(time.perf_counter() - t0, 1)}


def node_ids(lay: dict[str, Any], starts: int, seed: int) -> list[str]:
    rng = random.Random(seed + 2)
    mids = list(lay["mid"])
    rng.shuffle(mids)
    return [f"dataset:{NS}:{lay['names'][d]}" for d in mids[:starts]]


def measure_query(engine: Any, plan: list[str], depth: int) -> tuple[list[float], list[int]]:
    from strata.lineage.query import graph as g
    from strata.store.engine import read_tx

    times, sizes = [], []
    for node in plan:
        t0 = time.perf_counter()
        with read_tx(engine) as conn:
            nodes = g.lineage_graph(conn, node, depth)
        times.append((time.perf_counter() - t0) * 1000)
        sizes.append(len(nodes))
    return times, sizes


def measure_http(
    engine: Any, url: str, plan: list[str], depth: int
) -> tuple[list[float], list[int]]:
    import httpx

    from strata.api import create_app
    from strata.settings import Settings

    app = create_app(Settings(database_url=url), engine)

    async def go() -> tuple[list[float], list[int]]:
        times, sizes = [], []
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for node in plan:
                t0 = time.perf_counter()
                resp = await client.get("/api/v1/lineage", params={"nodeId": node, "depth": depth})
                body = resp.content
                times.append((time.perf_counter() - t0) * 1000)
                if resp.status_code != 200:
                    raise SystemExit(f"GET lineage {node} -> {resp.status_code}: {resp.text[:300]}")
                sizes.append(len(json.loads(body)["graph"]))
        return times, sizes

    return asyncio.run(go())


def run(a: argparse.Namespace) -> dict[str, Any]:
    with open_store(a.backend) as (engine, url):
        print(f"loading {a.jobs:,} jobs and {a.datasets:,} datasets on {a.backend} ...", flush=True)
        lay = populate(engine, a.jobs, a.datasets, a.seed)
        print(f"loaded in {lay['load_seconds']} s: {lay['rows']}", flush=True)
        starts = node_ids(lay, a.starts, a.seed)
        rng = random.Random(a.seed + 3)
        plan = [rng.choice(starts) for _ in range(a.requests)]
        measure_query(engine, starts[: a.warmup], a.depth)
        measure_http(engine, url, starts[: a.warmup], a.depth)
        q_times, q_sizes = measure_query(engine, plan, a.depth)
        h_times, h_sizes = measure_http(engine, url, plan, a.depth)
        assert q_sizes == h_sizes
        return {
            "backend": a.backend,
            "rows": lay["rows"],
            "pipelines": len(lay["pipelines"]),
            "load_seconds": lay["load_seconds"],
            "depth": a.depth,
            "requests": a.requests,
            "start_nodes": len(starts),
            "graph_nodes": summary([float(x) for x in q_sizes]),
            "query": summary(q_times),
            "http": summary(h_times),
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--jobs", type=int, default=100_000, help="jobs (default 100,000)")
    p.add_argument("--datasets", type=int, default=200_000, help="datasets (default 200,000)")
    p.add_argument("--depth", type=int, default=20, help="depth parameter (default 20)")
    p.add_argument("--requests", type=int, default=200, help="timed requests (default 200)")
    p.add_argument("--starts", type=int, default=50, help="distinct start datasets (default 50)")
    p.add_argument("--warmup", type=int, default=10, help="untimed requests first (default 10)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--out", default=None, help="JSON path (default bench/.out/lineage_graph-<backend>.json)"
    )
    a = p.parse_args()
    res = run(a)
    g = res["graph_nodes"]
    print_table(
        f"lineage graph, {a.backend}, {res['rows']['jobs']:,} jobs, {res['rows']['datasets']:,} "
        f"datasets, depth={a.depth}; nodes per answer min {g['min']:.0f} / p50 {g['p50']:.0f} / "
        f"max {g['max']:.0f}; ms",
        ["measured", "n", "p50", "p95", "p99", "max"],
        [
            [k, int(res[k]["n"]), res[k]["p50"], res[k]["p95"], res[k]["p99"], res[k]["max"]]
            for k in ("query", "http")
        ],
    )
    p95 = res["http"]["p95"]
    res["target_p95_ms"] = TARGET_P95_MS
    res["target_met"] = p95 <= TARGET_P95_MS
    print(
        f"\ntarget: HTTP p95 <= {TARGET_P95_MS:.0f} ms -> "
        f"{'met' if res['target_met'] else 'NOT met'} ({p95:.1f} ms)"
    )
    write_json(f"lineage_graph-{a.backend}", a.out or "", vars(a), res)


if __name__ == "__main__":
    main()
