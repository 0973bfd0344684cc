"""Run listing with a large store: ``GET /api/v1/namespaces/{ns}/jobs/{job}/runs?limit=20``.

The store is bulk-loaded straight into the schema tables (PostgreSQL ``COPY``, SQLite
``executemany``) with rows shaped as ingest writes them: per run a ``runs`` row (job,
job version, times, facets), its ``run_states`` (RUNNING then COMPLETED), one output
``dataset_versions`` row and one ``run_inputs`` binding. Most runs belong to one hot job;
the rest are spread over the other jobs. The same requests are timed three ways: the
route's database work alone (``queries.list_job_runs`` on the connection the API reads
with), through the ASGI app in process (httpx ``ASGITransport``, no sockets; includes the
client's own cost), and against a real uvicorn server (httptools, uvloop, one worker) on a
127.0.0.1 socket with a keep-alive ``http.client`` connection. Client, server and database
share the machine's cores.

Loading 750,000 runs takes minutes: ``--keep`` leaves the PostgreSQL database in place and
prints its URL, ``--db URL`` measures an existing store instead of loading one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import random
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from _common import (
    HERE,
    PG_ADMIN_URL,
    analyze,
    pg_database,
    print_table,
    scratch_dir,
    summary,
    uvicorn_app,
    write_json,
)

TARGET_P95_MS = 5.0
NS = "bench"
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


# --- shared store helpers (also used by lineage_graph.py) ---------------------------------


@contextmanager
def open_store(backend: str) -> Iterator[Any]:
    """A fresh metadata store migrated to head; yields (engine, url)."""
    from strata.store import migrate
    from strata.store.engine import create_engine

    if backend == "sqlite":
        with scratch_dir("lineage") as home:
            url = f"sqlite:///{home / 'meta.db'}"
            engine = create_engine(url)
            migrate.upgrade(engine)
            try:
                yield engine, url
            finally:
                engine.dispose()
        return
    with pg_database() as url:
        engine = create_engine(url)
        migrate.upgrade(engine)
        try:
            yield engine, url
        finally:
            engine.dispose()


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return value


def bulk_insert(
    engine: Any, table: Any, rows: Iterable[dict[str, Any]], chunk: int = 50_000
) -> int:
    """Insert rows fast: ``COPY`` on PostgreSQL, ``executemany`` in one transaction on SQLite.

    On PostgreSQL the foreign-key triggers are skipped for the load (``session_replication_role
    = replica``): the generator only writes rows whose references exist.
    """
    from strata.store.engine import write_tx

    count = 0
    batch: list[dict[str, Any]] = []

    def flush(conn: Any) -> None:
        nonlocal count
        if not batch:
            return
        if conn.dialect.name == "postgresql":
            cols = list(batch[0])
            dbapi = conn.connection.dbapi_connection
            with dbapi.cursor() as cur:
                names = ", ".join(f'"{c}"' for c in cols)
                with cur.copy(f'COPY "{table.name}" ({names}) FROM STDIN') as cp:
                    for r in batch:
                        cp.write_row([_copy_value(r[c]) for c in cols])
        else:
            conn.execute(table.insert(), batch)
        count += len(batch)
        batch.clear()

    with write_tx(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL session_replication_role = replica")
        for r in rows:
            batch.append(r)
            if len(batch) >= chunk:
                flush(conn)
        flush(conn)
    return count


def refresh_run_counts(engine: Any) -> None:
    """What the ``runs`` triggers keep; the PostgreSQL bulk load skips triggers."""
    from strata.store.engine import write_tx

    with write_tx(engine) as conn:
        conn.exec_driver_sql("DELETE FROM job_run_counts")
        conn.exec_driver_sql(
            "INSERT INTO job_run_counts (job_uuid, run_count) "
            "SELECT job_uuid, COUNT(*) FROM runs GROUP BY job_uuid"
        )


def uuid7_at(at: datetime, rng: random.Random) -> str:
    """A version-7 UUID for ``at`` (runs' ids are client-made uuid7s in OpenLineage)."""
    ms = int(at.timestamp() * 1000)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rng.getrandbits(12) << 64
    value |= 0b10 << 62 | rng.getrandbits(62)
    return str(uuid.UUID(int=value))


SCHEMA = [
    {"name": "id", "type": "BIGINT"},
    {"name": "ts", "type": "TIMESTAMP"},
    {"name": "value", "type": "DOUBLE"},
]


def dataset_row(ns: str, name: str, at: datetime, current: str | None) -> dict[str, Any]:
    from strata import ids

    return {
        "uuid": ids.dataset_uuid(ns, name),
        "namespace": ns,
        "name": name,
        "type": "DB_TABLE",
        "source_name": None,
        "physical_name": name,
        "is_lake": False,
        "current_version_uuid": current,
        "description": None,
        "facets": {},
        "created_at": at,
        "updated_at": at,
        "deleted_at": None,
        "fold_state": {},
    }


def job_row(ns: str, name: str, at: datetime, current: str | None) -> dict[str, Any]:
    from strata import ids

    return {
        "uuid": ids.job_uuid(ns, name),
        "namespace": ns,
        "simple_name": name,
        "name": name,
        "parent_job_uuid": None,
        "parent_key": "",
        "type": "BATCH",
        "current_version_uuid": current,
        "location": None,
        "description": None,
        "facets": {},
        "created_at": at,
        "updated_at": at,
        "fold_state": {"raw": name, "facets": {}, "parent": None, "static": {}},
    }


def job_version_row(
    job: str, ins: Sequence[tuple[str, str]], outs: Sequence[tuple[str, str]], at: datetime
) -> dict[str, Any]:
    from strata import ids

    fp = uuid.uuid5(uuid.NAMESPACE_URL, f"{job}|{sorted(ins)}|{sorted(outs)}").hex * 2
    return {
        "uuid": ids.job_version_uuid(job, fp),
        "job_uuid": job,
        "version": fp,
        "source_code": None,
        "location": None,
        "inputs": [{"namespace": a, "name": b} for a, b in sorted(ins)],
        "outputs": [{"namespace": a, "name": b} for a, b in sorted(outs)],
        "latest_run_uuid": None,
        "created_at": at,
        "updated_at": at,
    }


# --- population ---------------------------------------------------------------------------


def populate(engine: Any, runs: int, jobs: int, hot_share: float, seed: int) -> dict[str, Any]:
    """Jobs ``job-000``… each reading ``in-NNN`` and writing ``out-NNN``; returns the layout."""
    from strata import ids
    from strata.store import schema as s

    rng = random.Random(seed)
    hot_runs = int(runs * hot_share) if jobs > 1 else runs
    per_job = [hot_runs] + [0] * (jobs - 1)
    for i in range(runs - hot_runs):
        per_job[1 + i % (jobs - 1)] += 1
    names = [f"job-{i:03d}" for i in range(jobs)]
    job_ids = [ids.job_uuid(NS, n) for n in names]
    ins = [(NS, f"in-{i:03d}") for i in range(jobs)]
    outs = [(NS, f"out-{i:03d}") for i in range(jobs)]
    versions = [job_version_row(job_ids[i], [ins[i]], [outs[i]], EPOCH) for i in range(jobs)]
    initial = [ids.initial_version_uuid(ids.dataset_uuid(*ins[i])) for i in range(jobs)]

    # Runs: one every ~minute per job, newest last; ids are uuid7s of their start.
    run_ids: list[list[str]] = []
    starts: list[list[datetime]] = []
    for i in range(jobs):
        step = timedelta(seconds=max(1, 365 * 86400 // max(per_job[i], 1)))
        t = [
            EPOCH + step * k + timedelta(milliseconds=rng.randrange(1000))
            for k in range(per_job[i])
        ]
        starts.append(t)
        run_ids.append([uuid7_at(x, rng) for x in t])

    last_out = {
        i: ids.output_version_uuid(run_ids[i][-1], ids.dataset_uuid(*outs[i]))
        for i in range(jobs)
        if per_job[i]
    }
    now = EPOCH + timedelta(days=366)
    with_ns = [
        {
            "name": NS,
            "owner": "anonymous",
            "description": None,
            "is_hidden": False,
            "created_at": EPOCH,
            "updated_at": now,
        }
    ]
    bulk_insert(engine, s.namespaces, with_ns)
    bulk_insert(
        engine,
        s.datasets,
        [dataset_row(NS, ins[i][1], EPOCH, initial[i]) for i in range(jobs)]
        + [dataset_row(NS, outs[i][1], EPOCH, last_out.get(i)) for i in range(jobs)],
    )
    for i, v in enumerate(versions):
        v["latest_run_uuid"] = run_ids[i][-1] if per_job[i] else None
        v["updated_at"] = starts[i][-1] if per_job[i] else EPOCH
    bulk_insert(
        engine,
        s.jobs,
        [job_row(NS, names[i], EPOCH, versions[i]["uuid"]) for i in range(jobs)],
    )
    bulk_insert(engine, s.job_versions, versions)
    bulk_insert(
        engine,
        s.job_version_io,
        [
            {
                "job_version_uuid": versions[i]["uuid"],
                "dataset_uuid": ids.dataset_uuid(*d),
                "io_type": io_type,
                "job_uuid": job_ids[i],
            }
            for i in range(jobs)
            for d, io_type in ((ins[i], "INPUT"), (outs[i], "OUTPUT"))
        ],
    )
    bulk_insert(
        engine,
        s.dataset_versions,
        [
            {
                "uuid": initial[i],
                "dataset_uuid": ids.dataset_uuid(*ins[i]),
                "created_at": EPOCH,
                "external_version": None,
            }
            for i in range(jobs)
        ],
    )

    def run_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            for rid, t in zip(run_ids[i], starts[i], strict=True):
                end = t + timedelta(seconds=30)
                yield {
                    "uuid": rid,
                    "job_uuid": job_ids[i],
                    "job_version_uuid": versions[i]["uuid"],
                    "parent_run_uuid": None,
                    "state": "COMPLETED",
                    "nominal_start_time": None,
                    "nominal_end_time": None,
                    "started_at": t,
                    "ended_at": end,
                    "transitioned_at": end,
                    "created_at": t,
                    "updated_at": end,
                    "facets": {"processing_engine": {"name": "spark", "version": "3.5.1"}},
                    "error": None,
                }

    def state_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            for rid, t in zip(run_ids[i], starts[i], strict=True):
                for state, at, tag in (
                    ("RUNNING", t, "s"),
                    ("COMPLETED", t + timedelta(seconds=30), "c"),
                ):
                    digest = f"{rid}{tag}"
                    yield {
                        "uuid": ids.run_state_uuid(rid, digest),
                        "run_uuid": rid,
                        "state": state,
                        "transitioned_at": at,
                        "event_uuid": ids.event_uuid(digest),
                    }

    def output_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            ds = ids.dataset_uuid(*outs[i])
            for rid, t in zip(run_ids[i], starts[i], strict=True):
                yield {
                    "uuid": ids.output_version_uuid(rid, ds),
                    "dataset_uuid": ds,
                    "created_at": t + timedelta(seconds=30),
                    "run_uuid": rid,
                    "schema_fields": SCHEMA,
                    "facets": {},
                    "lifecycle_state": None,
                }

    def input_rows() -> Iterator[dict[str, Any]]:
        for i in range(jobs):
            for rid in run_ids[i]:
                yield {"run_uuid": rid, "dataset_version_uuid": initial[i]}

    t0 = time.perf_counter()
    counts = {
        "runs": bulk_insert(engine, s.runs, run_rows()),
        "run_states": bulk_insert(engine, s.run_states, state_rows()),
        "dataset_versions": bulk_insert(engine, s.dataset_versions, output_rows()) + jobs,
        "run_inputs": bulk_insert(engine, s.run_inputs, input_rows()),
    }
    refresh_run_counts(engine)
    analyze(engine)
    return {
        "jobs": names,
        "job_uuids": job_ids,
        "runs_per_job": per_job,
        "rows": counts,
        "load_seconds": round(time.perf_counter() - t0, 1),
    }


# --- measurement --------------------------------------------------------------------------


def request_plan(layout: dict[str, Any], requests: int, hot_share: float, seed: int) -> list[int]:
    """Job indexes to ask for: the hot job ``hot_share`` of the time, others round-robin."""
    rng = random.Random(seed + 1)
    jobs = len(layout["jobs"])
    plan = [
        0 if rng.random() < hot_share or jobs == 1 else 1 + rng.randrange(jobs - 1)
        for _ in range(requests)
    ]
    return plan


def measure_query(engine: Any, layout: dict[str, Any], plan: list[int], limit: int) -> list[float]:
    """The route's database work alone: its connection and ``queries.list_job_runs``."""
    from strata.api.deps import read_connection
    from strata.lineage.query import runs as run_reads

    out = []
    for i in plan:
        t0 = time.perf_counter()
        with read_connection(engine) as conn:
            page = run_reads.list_job_runs(conn, NS, layout["jobs"][i], limit, 0)
        out.append((time.perf_counter() - t0) * 1000)
        assert page is not None and len(page.items) == min(limit, layout["runs_per_job"][i])
    return out


def measure_http(
    engine: Any, url: str, layout: dict[str, Any], plan: list[int], limit: int
) -> list[float]:
    import httpx

    from strata.api import create_app
    from strata.settings import Settings

    app = create_app(Settings(database_url=url), engine)

    async def go() -> list[float]:
        out = []
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for i in plan:
                path = f"/api/v1/namespaces/{NS}/jobs/{layout['jobs'][i]}/runs"
                t0 = time.perf_counter()
                resp = await client.get(path, params={"limit": limit})
                out.append((time.perf_counter() - t0) * 1000)
                if resp.status_code != 200:
                    raise SystemExit(f"GET {path} -> {resp.status_code}: {resp.text[:300]}")
                body = resp.json()
                assert len(body["runs"]) == min(limit, layout["runs_per_job"][i])
                assert body["totalCount"] == layout["runs_per_job"][i]
        return out

    return asyncio.run(go())


@contextmanager
def server(url: str) -> Iterator[int]:
    """uvicorn serving the app on a free 127.0.0.1 port, one worker; yields the port."""
    with scratch_dir("runs-server") as home:
        env = dict(os.environ, STRATA_DATABASE_URL=url, STRATA_HOME=str(home))
        with uvicorn_app("_common:app_factory", HERE, env, home / "server.log") as port:
            yield port


def measure_server(port: int, layout: dict[str, Any], plan: list[int], limit: int) -> list[float]:
    """Requests over one keep-alive connection; the time includes reading the whole body."""
    conn = http.client.HTTPConnection("127.0.0.1", port)
    out = []
    try:
        for i in plan:
            path = f"/api/v1/namespaces/{NS}/jobs/{layout['jobs'][i]}/runs?limit={limit}"
            t0 = time.perf_counter()
            conn.request("GET", path)
            resp = conn.getresponse()
            data = resp.read()
            out.append((time.perf_counter() - t0) * 1000)
            if resp.status != 200:
                raise SystemExit(f"GET {path} -> {resp.status}: {data[:300]!r}")
            body = json.loads(data)
            assert len(body["runs"]) == min(limit, layout["runs_per_job"][i])
            assert body["totalCount"] == layout["runs_per_job"][i]
    finally:
        conn.close()
    return out


def existing_layout(engine: Any) -> dict[str, Any]:
    """The layout of a store loaded earlier by :func:`populate` (for ``--db``)."""
    import sqlalchemy as sa

    from strata.store import schema as s

    j, c = s.jobs, s.job_run_counts
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(j.c.name, j.c.uuid, sa.func.coalesce(c.c.run_count, 0))
            .outerjoin(c, c.c.job_uuid == j.c.uuid)
            .where(j.c.namespace == NS)
            .order_by(j.c.name)
        ).all()
    if not rows:
        raise SystemExit(f"no jobs in namespace {NS!r}: is this a store loaded by this script?")
    return {
        "jobs": [r[0] for r in rows],
        "job_uuids": [r[1] for r in rows],
        "runs_per_job": [int(r[2]) for r in rows],
        "rows": {"runs": sum(int(r[2]) for r in rows)},
        "load_seconds": None,
    }


@contextmanager
def loaded_store(a: argparse.Namespace) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """(engine, url, layout): the store named by ``--db``, else a freshly loaded one."""
    from strata.store.engine import create_engine

    if a.db:
        engine = create_engine(a.db)
        try:
            yield engine, a.db, existing_layout(engine)
        finally:
            engine.dispose()
        return
    if a.keep:
        if a.backend != "postgresql":
            raise SystemExit("--keep is for PostgreSQL stores")
        from strata.store import migrate

        url = keep_database()
        engine = create_engine(url)
        migrate.upgrade(engine)
        print(f"store kept at {url}", flush=True)
        try:
            yield engine, url, load(engine, a)
        finally:
            engine.dispose()
        return
    with open_store(a.backend) as (engine, url):
        yield engine, url, load(engine, a)


def keep_database() -> str:
    import sqlalchemy as sa

    from strata.store.engine import create_engine

    admin = create_engine(PG_ADMIN_URL, poolclass=sa.pool.NullPool, isolation_level="AUTOCOMMIT")
    name = f"strata_bench_runs_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(False)


def load(engine: Any, a: argparse.Namespace) -> dict[str, Any]:
    print(f"loading {a.runs:,} runs over {a.jobs} jobs on {a.backend} ...", flush=True)
    layout = populate(engine, a.runs, a.jobs, a.hot_share, a.seed)
    print(f"loaded in {layout['load_seconds']} s: {layout['rows']}", flush=True)
    return layout


MEASURES = ("query", "http", "server")


def run(a: argparse.Namespace) -> dict[str, Any]:
    measures = [m.strip() for m in a.measure.split(",") if m.strip()]
    unknown = set(measures) - set(MEASURES)
    if unknown:
        raise SystemExit(f"unknown --measure {sorted(unknown)}; pick from {list(MEASURES)}")
    with loaded_store(a) as (engine, url, layout), contextlib.ExitStack() as stack:
        plan = request_plan(layout, a.requests, a.hot_request_share, a.seed)
        warm = plan[: a.warmup]
        port = stack.enter_context(server(url)) if "server" in measures else 0
        fns = {
            "query": lambda p: measure_query(engine, layout, p, a.limit),
            "http": lambda p: measure_http(engine, url, layout, p, a.limit),
            "server": lambda p: measure_server(port, layout, p, a.limit),
        }
        for label in measures:
            fns[label](warm)
        results: dict[str, Any] = {}
        for label in measures:
            times = fns[label](plan)
            hot = [t for t, i in zip(times, plan, strict=True) if i == 0]
            cold = [t for t, i in zip(times, plan, strict=True) if i != 0]
            results[label] = {
                "all": summary(times),
                "hot_job": summary(hot),
                "other_jobs": summary(cold) if cold else None,
            }
        return {
            "backend": a.backend,
            "runs": sum(layout["runs_per_job"]),
            "jobs": len(layout["jobs"]),
            "hot_job_runs": layout["runs_per_job"][0],
            "rows": layout["rows"],
            "load_seconds": layout["load_seconds"],
            "requests": a.requests,
            "limit": a.limit,
            **results,
        }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument("--runs", type=int, default=750_000, help="runs in the store (default 750,000)")
    p.add_argument("--jobs", type=int, default=20, help="jobs (default 20)")
    p.add_argument(
        "--hot-share",
        type=float,
        default=0.8,
        help="share of runs that belong to the hot job (default 0.8)",
    )
    p.add_argument("--requests", type=int, default=500, help="timed requests (default 500)")
    p.add_argument(
        "--hot-request-share",
        type=float,
        default=0.5,
        help="share of requests that ask for the hot job (default 0.5)",
    )
    p.add_argument("--warmup", type=int, default=50, help="untimed requests first (default 50)")
    p.add_argument("--limit", type=int, default=20, help="page size (default 20)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--measure",
        default=",".join(MEASURES),
        help="what to time, comma-separated: query (the function alone), http (the app "
        "through httpx ASGITransport), server (uvicorn on a socket) (default: all three)",
    )
    p.add_argument("--db", default=None, help="measure this already loaded store (no load)")
    p.add_argument(
        "--keep", action="store_true", help="keep the loaded PostgreSQL database for --db"
    )
    p.add_argument(
        "--out", default=None, help="JSON path (default bench/.out/runs_list-<backend>.json)"
    )
    a = p.parse_args()
    if a.db:
        a.backend = "sqlite" if a.db.startswith("sqlite") else "postgresql"
    res = run(a)
    rows = []
    for label in MEASURES:
        for group in ("all", "hot_job", "other_jobs"):
            st = res.get(label, {}).get(group)
            if st:
                rows.append(
                    [label, group, int(st["n"]), st["p50"], st["p95"], st["p99"], st["max"]]
                )
    print_table(
        f"runs list, {a.backend}, {res['runs']:,} runs, {res['jobs']} jobs "
        f"(hot job {res['hot_job_runs']:,} runs), limit={a.limit}, ms",
        ["measured", "jobs", "n", "p50", "p95", "p99", "max"],
        rows,
    )
    res["target_p95_ms"] = TARGET_P95_MS
    for label in ("server", "http"):
        if label in res:
            p95 = res[label]["all"]["p95"]
            met = p95 <= TARGET_P95_MS
            res[f"target_met_{label}"] = met
            print(
                f"target: {label} p95 <= {TARGET_P95_MS} ms -> "
                f"{'met' if met else 'NOT met'} ({p95:.2f} ms)"
            )
    write_json(f"runs_list-{a.backend}", a.out or "", vars(a), res)


if __name__ == "__main__":
    main()
