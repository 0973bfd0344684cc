"""OpenLineage ingest throughput over HTTP against a real uvicorn server.

A fresh store (PostgreSQL or SQLite) is migrated, then ``uvicorn`` serves
``strata.api.create_app`` from a subprocess on a free 127.0.0.1 port (one worker, access
log off). Eight client threads (httpx, keep-alive) send realistic RunEvents: START and
COMPLETE of each run, 1-3 inputs and 1-3 outputs per run drawn from a shared pool of
datasets, a schema facet on every dataset, jobs from a shared pool. Two modes, each with a
fixed number of events: one event per ``POST /api/v1/lineage``, and ``POST
/api/v1/lineage/batch`` with ``--batch`` events per request. The load generator runs on the
same machine as the server and the database, so all three share its cores.

``--profile N`` also ingests N events in process (no HTTP) under cProfile and prints where
ingest time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import machine, pg_database, print_table, scratch_dir, summary, uvicorn_app

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / ".out"
TARGET_SINGLE = 2000.0
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.22.0/integration/spark"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
SCHEMA_FACET = (
    "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
)
TYPES = ["BIGINT", "STRING", "DOUBLE", "TIMESTAMP", "BOOLEAN", "DATE"]


def app_factory() -> Any:
    """The ASGI app for ``uvicorn --factory`` (settings from ``STRATA_*``)."""
    from strata.api import create_app
    from strata.settings import Settings

    return create_app(Settings.load())


# --- events -------------------------------------------------------------------------------


def _dataset(rng: random.Random, ns: str, name: str) -> dict[str, Any]:
    fields = [{"name": f"col_{i}", "type": rng.choice(TYPES)} for i in range(rng.randint(3, 12))]
    return {
        "namespace": ns,
        "name": name,
        "facets": {"schema": {"_producer": PRODUCER, "_schemaURL": SCHEMA_FACET, "fields": fields}},
    }


def make_runs(runs: int, jobs: int, datasets: int, seed: int, tag: str) -> list[list[bytes]]:
    """Per run [START, COMPLETE] as JSON bytes; names are shared so runs hit the same rows."""
    rng = random.Random(seed)
    ns = "bench"
    pool = [_dataset(rng, "s3://bench-lake", f"warehouse/table_{i:04d}") for i in range(datasets)]
    base = datetime(2024, 6, 1, tzinfo=UTC)
    out = []
    for i in range(runs):
        job = f"{tag}.job_{rng.randrange(jobs):04d}"
        picks = rng.sample(range(datasets), rng.randint(2, 6))
        cut = max(1, min(len(picks) - 1, rng.randint(1, 3)))
        ins, outs = picks[:cut], picks[cut:]
        start = base + timedelta(seconds=i)
        run_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        events = []
        for kind, at in (("START", start), ("COMPLETE", start + timedelta(seconds=20))):
            body = {
                "eventType": kind,
                "eventTime": at.isoformat().replace("+00:00", "Z"),
                "run": {"runId": run_id, "facets": {}},
                "job": {"namespace": ns, "name": job, "facets": {}},
                "inputs": [pool[d] for d in ins],
                "outputs": [pool[d] for d in outs],
                "producer": PRODUCER,
                "schemaURL": RUN_EVENT,
            }
            events.append(json.dumps(body, separators=(",", ":")).encode())
        out.append(events)
    return out


# --- server -------------------------------------------------------------------------------


@contextmanager
def store(backend: str) -> Iterator[tuple[str, Path]]:
    """A migrated store: (database URL, STRATA_HOME)."""
    from strata.store import migrate
    from strata.store.engine import create_engine

    with scratch_dir("ingest") as home:
        if backend == "sqlite":
            url = f"sqlite:///{home / 'meta.db'}"
            engine = create_engine(url)
            migrate.upgrade(engine)
            engine.dispose()
            yield url, home
            return
        with pg_database() as url:
            engine = create_engine(url)
            migrate.upgrade(engine)
            engine.dispose()
            yield url, home


@contextmanager
def server(url: str, home: Path) -> Iterator[str]:
    env = dict(os.environ, STRATA_DATABASE_URL=url, STRATA_HOME=str(home))
    with uvicorn_app("lineage_ingest:app_factory", HERE, env, home / "server.log") as port:
        yield f"http://127.0.0.1:{port}"


# --- load ---------------------------------------------------------------------------------


def drive(base: str, runs: list[list[bytes]], clients: int, batch: int) -> dict[str, Any]:
    """Send every event once; ``batch`` 0 means one event per request."""
    import httpx

    shards = [runs[i::clients] for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    headers = {"Content-Type": "application/json"}

    def worker(k: int) -> None:
        with httpx.Client(base_url=base, timeout=300, headers=headers) as client:
            if batch == 0:
                # A run's START before its COMPLETE, as a producer would send them.
                bodies = [ev for run in shards[k] for ev in run]
                for body in bodies:
                    t0 = time.perf_counter()
                    r = client.post("/api/v1/lineage", content=body)
                    latencies[k].append((time.perf_counter() - t0) * 1000)
                    if r.status_code != 201:
                        errors.append(f"{r.status_code}: {r.text[:200]}")
                return
            events = [ev for run in shards[k] for ev in run]
            for i in range(0, len(events), batch):
                body = b"[" + b",".join(events[i : i + batch]) + b"]"
                t0 = time.perf_counter()
                r = client.post("/api/v1/lineage/batch", content=body)
                latencies[k].append((time.perf_counter() - t0) * 1000)
                if r.status_code != 200 or r.json()["summary"]["failed"]:
                    errors.append(f"{r.status_code}: {r.text[:200]}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    events = sum(len(r) for r in runs)
    lat = [x for part in latencies for x in part]
    s = summary(lat)
    from _common import percentile

    s["p95"] = percentile(lat, 95)
    return {
        "events": events,
        "requests": len(lat),
        "seconds": round(elapsed, 2),
        "events_per_s": events / elapsed,
        "request_ms": s,
        "errors": len(errors),
        "first_errors": errors[:3],
    }


def profile(backend: str, events: int, seed: int, top: int) -> str:
    """Ingest ``events`` in process under cProfile; the report as text."""
    from sqlalchemy import event as sa_event

    from strata.lineage.ingest import ingest_event
    from strata.store.engine import create_engine

    runs = make_runs(events // 2, 200, 500, seed + 9, "profile")
    payloads = [json.loads(ev) for run in runs for ev in run]
    with store(backend) as (url, _home):
        engine = create_engine(url)
        statements = 0

        def count(*_args: Any) -> None:
            nonlocal statements
            statements += 1

        sa_event.listen(engine, "before_cursor_execute", count)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        for p in payloads:
            ingest_event(engine, p)
        prof.disable()
        elapsed = time.perf_counter() - t0
        engine.dispose()
    buf = io.StringIO()
    buf.write(
        f"in-process ingest_event, {backend}: {len(payloads)} events in {elapsed:.1f} s "
        f"({len(payloads) / elapsed:.0f} events/s under cProfile), "
        f"{statements / len(payloads):.0f} SQL statements per event\n"
    )
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats("strata/", top)
    return buf.getvalue()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument(
        "--events",
        type=int,
        default=4000,
        help="events per mode, START+COMPLETE pairs (default 4000)",
    )
    p.add_argument("--clients", type=int, default=8, help="client threads (default 8)")
    p.add_argument("--batch", type=int, default=100, help="events per batch request (default 100)")
    p.add_argument("--jobs", type=int, default=200, help="distinct jobs (default 200)")
    p.add_argument("--datasets", type=int, default=500, help="distinct datasets (default 500)")
    p.add_argument("--warmup", type=int, default=200, help="untimed events first (default 200)")
    p.add_argument("--modes", default="single,batch", help="single, batch or both (default)")
    p.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile N events ingested in process (default off)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--out", default=None, help="JSON path (default bench/.out/lineage_ingest-<backend>.json)"
    )
    a = p.parse_args()
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    results: dict[str, Any] = {"backend": a.backend, "clients": a.clients, "cpus": os.cpu_count()}
    with store(a.backend) as (url, home), server(url, home) as base:
        warm = make_runs(a.warmup // 2, a.jobs, a.datasets, a.seed, "warm")
        drive(base, warm, a.clients, 0)
        for n, mode in enumerate(modes):
            runs = make_runs(a.events // 2, a.jobs, a.datasets, a.seed + 1 + n, mode)
            print(f"{mode}: sending {a.events} events from {a.clients} clients ...", flush=True)
            results[mode] = drive(base, runs, a.clients, 0 if mode == "single" else a.batch)
    rows = []
    for mode in modes:
        r = results[mode]
        rows.append([
            mode if mode == "single" else f"batch of {a.batch}", r["events"], r["requests"],
            r["seconds"], r["events_per_s"], r["request_ms"]["p50"], r["request_ms"]["p95"],
            r["request_ms"]["p99"], r["errors"],
        ])  # fmt: skip
    print_table(
        f"lineage ingest over HTTP, {a.backend}, {a.clients} clients, {os.cpu_count()} cores "
        "shared by clients, server and database",
        ["mode", "events", "requests", "s", "events/s", "p50 ms", "p95 ms", "p99 ms", "errors"],
        rows,
    )
    if "single" in results:
        eps = results["single"]["events_per_s"]
        results["target_single_events_per_s"] = TARGET_SINGLE
        results["target_met"] = eps >= TARGET_SINGLE
        print(
            f"\ntarget: single >= {TARGET_SINGLE:,.0f} events/s -> "
            f"{'met' if eps >= TARGET_SINGLE else 'NOT met'} ({eps:,.0f} events/s)"
        )
    if a.profile:
        report = profile(a.backend, a.profile, a.seed, 30)
        results["profile"] = report
        print("\n" + report)
    path = Path(a.out) if a.out else OUT_DIR / f"lineage_ingest-{a.backend}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "benchmark": "lineage_ingest",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "args": vars(a),
        "results": results,
    }
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
