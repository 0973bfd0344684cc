"""OpenLineage ingest throughput over HTTP against a real uvicorn server.

A fresh store (PostgreSQL or SQLite) is migrated, then ``uvicorn`` serves
``strata.api.create_app`` from a subprocess on a free 127.0.0.1 port (one worker, access
log off). Clients send realistic RunEvents: START and COMPLETE of each run, 1-3 inputs and
1-3 outputs per run drawn from a shared pool of datasets, a schema facet on every dataset,
jobs from a shared pool; each phase (the warm-up, then each mode) happens after the one
before in event time, as a producer's events do. Two modes, each with a fixed number of
events: one event per
``POST /api/v1/lineage``, and ``POST /api/v1/lineage/batch`` with ``--batch`` events per
request. The load generator runs on the same machine as the server and the database, so
all three share its cores.

The client. ``--clients`` (8) closed-loop clients, each on its own keep-alive HTTP/1.1
connection, all on one asyncio event loop (uvloop when installed) in this process: the
orchestrating code is idle during the load, so a separate process would add nothing but
handing it the events. Every request is encoded to bytes before the clock starts; a
response is read as status line, headers (``Content-Length``, or chunked) and body, nothing
more. A client sends its next request only when the previous response has arrived, as a
producer does, and its runs go START before COMPLETE. A response counts as ingested if it
is 201 (single) or 200 with ``summary.failed == 0`` (batch); anything else is an error. An
earlier client of eight threads with httpx saturated at about 1,100 requests/s even against
an endpoint that does nothing, below the 2,000 events/s target. Against that no-op endpoint
(same app, POST answered without writing) this client drove 3,500-4,700 requests/s on a
2-core machine (less when other work shared it) while using under a third of one core, so
the single uvicorn worker, not the client, was the limit there.

Two figures per mode. *Acknowledged*: events / time until the last response. *Visible*:
events / time until the effects of every event can be read back. Reads start only after the
last response, so they do not compete with the load. First the run in the last response is
polled alone (``GET /api/v1/jobs/runs/{id}``, one read every 10 ms or every 1/50 of the
wait so far if longer) until it is COMPLETED, so that a server still folding events in is
not slowed down by reads. Then the same connections read
``GET /api/v1/namespaces/bench/jobs?limit=1`` (the total number of jobs) and, for every job
the mode wrote to, ``GET /api/v1/namespaces/bench/jobs/{job}/runs``: a job is done when its
run count is exactly the number of runs sent for it and each of those runs is there with
state COMPLETED. Jobs not yet done are read again (pausing between passes as long as a pass
took) until all are, or until ``--visible-timeout``. The visible time is when the response
that confirmed the last job arrived, so it includes the reads themselves: the lag (visible
minus acknowledged) is printed next to what one more read-back pass costs once everything
is visible. A server that acknowledges an event only after its effects are committed shows
both figures nearly equal; one that acknowledges on storing the raw event and folds it in
later is judged on the visible figure, which is what the target applies to.

``--replicas 1,2`` measures one server, then two servers on one fresh PostgreSQL store
each, side by side in one run; client ``k`` talks to server ``k mod n``, as a load
balancer spreading connections would, and reads go through the same connections.

``--against SRC`` runs the whole bench with this checkout's ``src`` and another's, each in
a fresh process, ``--rounds`` times alternating which goes first, and prints the medians'
ratios. ``--profile N`` also ingests N events in process (no HTTP) under cProfile and
prints where ingest time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import json
import os
import pstats
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

from _common import (
    checkouts_alternating,
    cpu_by_kind,
    machine,
    pg_database,
    print_table,
    scratch_dir,
    summary,
    uvicorn_app,
)

HERE = Path(__file__).resolve().parent
OUT_DIR = HERE / ".out"
TARGET_SINGLE = 2000.0
PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.22.0/integration/spark"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
SCHEMA_FACET = (
    "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet"
)
JOBS = "/api/v1/namespaces/bench/jobs"
PAGE = 10_000  # the API's largest page
CPU_KINDS = ("bench", "server", "fold", "postgres")
POLL_S = 0.01  # between reads while waiting for the effects of the load to show
TYPES = ["BIGINT", "STRING", "DOUBLE", "TIMESTAMP", "BOOLEAN", "DATE"]


# --- events -------------------------------------------------------------------------------


def _dataset(rng: random.Random, ns: str, name: str) -> dict[str, Any]:
    fields = [{"name": f"col_{i}", "type": rng.choice(TYPES)} for i in range(rng.randint(3, 12))]
    return {
        "namespace": ns,
        "name": name,
        "facets": {"schema": {"_producer": PRODUCER, "_schemaURL": SCHEMA_FACET, "fields": fields}},
    }


BASE = datetime(2024, 6, 1, tzinfo=UTC)


def make_runs(
    runs: int, jobs: int, datasets: int, seed: int, tag: str, base: datetime = BASE
) -> list[list[bytes]]:
    """Per run [START, COMPLETE] as JSON bytes; names are shared so runs hit the same rows.
    Run ``i`` starts ``i`` seconds after ``base`` and completes 20 seconds later."""
    rng = random.Random(seed)
    ns = "bench"
    pool = [_dataset(rng, "s3://bench-lake", f"warehouse/table_{i:04d}") for i in range(datasets)]
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
def servers(url: str, home: Path, replicas: int) -> Iterator[list[int]]:
    """``replicas`` servers (the app under uvicorn) on the given store; yields their
    127.0.0.1 ports."""
    env = dict(os.environ, STRATA_DATABASE_URL=url, STRATA_HOME=str(home))
    with ExitStack() as stack:
        yield [
            stack.enter_context(
                uvicorn_app("_common:app_factory", HERE, env, home / f"server-{k}.log")
            )
            for k in range(replicas)
        ]


# --- client -------------------------------------------------------------------------------


def _request(method: str, path: str, host: str, body: bytes = b"") -> bytes:
    """One HTTP/1.1 request as bytes (keep-alive is the HTTP/1.1 default)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + "\r\n").encode("ascii") + body


class Connection:
    """A keep-alive HTTP/1.1 connection that reads a response as status, headers, body."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def call(self, request: bytes) -> tuple[int, bytes]:
        """Send ``request``, wait for the whole response; (status, body)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        try:
            self.writer.write(request)
            head = await self.reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length, chunked, close = 0, False, False
            for line in head[:-4].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
                elif name == b"connection":
                    close = value.strip().lower() == b"close"
            if chunked:
                body = await self._chunked()
            else:
                body = await self.reader.readexactly(length) if length else b""
        except BaseException:
            self.close()
            raise
        if close:
            self.close()
        return status, body

    async def _chunked(self) -> bytes:
        assert self.reader is not None
        parts = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while await self.reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _run(coro: Any) -> Any:
    """Run ``coro`` on a fresh event loop, uvloop's when installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


# --- load ---------------------------------------------------------------------------------


def _expected(runs: list[list[bytes]]) -> dict[str, set[str]]:
    """Job name -> the run ids sent for it (from each run's last event)."""
    out: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        ev = json.loads(run[-1])
        out[ev["job"]["name"]].add(ev["run"]["runId"])
    return out


def _ingested(status: int, body: bytes, batch: int) -> bool:
    if batch == 0:
        return status == 201
    return status == 200 and json.loads(body)["summary"]["failed"] == 0


async def _load(
    conns: list[Connection], requests: list[list[bytes]], batch: int, errors: list[str]
) -> tuple[float, int, list[float]]:
    """Every client sends its requests one after another.

    Returns the start, the client whose last response came last, and latencies in ms.
    """
    latencies: list[list[float]] = [[] for _ in conns]
    order: list[int] = []

    async def client(k: int) -> None:
        conn, lat, clock = conns[k], latencies[k], time.perf_counter
        for req in requests[k]:
            t0 = clock()
            try:
                status, body = await conn.call(req)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
                errors.append(f"client {k}: {type(e).__name__}: {e}")
                continue
            lat.append((clock() - t0) * 1000)
            if not _ingested(status, body, batch):
                errors.append(f"{status}: {body[:200].decode(errors='replace')}")
        order.append(k)

    start = time.perf_counter()
    await asyncio.gather(*(client(k) for k in range(len(conns))))
    return start, order[-1], [x for part in latencies for x in part]


async def _visible(
    conns: list[Connection], host: str, expected: dict[str, set[str]], jobs_total: int,
    sentinel: str, timeout: float,
) -> dict[str, Any]:  # fmt: skip
    """Read back every run of every job in ``expected`` until each is there and COMPLETED.

    First only ``sentinel`` (the run in the last response) is polled, one read every
    ``POLL_S`` or every 1/50 of the wait so far if longer, so that a server still folding
    events in is not slowed by reads; then every job is read, and the jobs not yet complete
    are read again, pausing between passes at least as long as the pass took. Returns when
    the last confirming response arrived (``perf_counter``), the reads made, and what was
    still missing at the deadline.
    """
    began = time.perf_counter()
    deadline = began + timeout
    confirmed_at = 0.0
    reads = passes = 0
    last_problem: dict[str, str] = {}

    async def get(conn: Connection, path: str) -> tuple[int, Any]:
        nonlocal reads
        reads += 1
        status, body = await conn.call(_request("GET", path, host))
        return status, json.loads(body) if status == 200 else None

    async def check(conn: Connection, job: str) -> bool:
        if not job:
            status, doc = await get(conn, f"{JOBS}?limit=1")
            total = doc["totalCount"] if doc else None
            last_problem[job] = f"{total} jobs in namespace, expected {jobs_total} ({status})"
            return total == jobs_total
        want = expected[job]
        seen: dict[str, str] = {}
        offset, total = 0, 0
        while True:
            path = f"{JOBS}/{quote(job, safe='')}/runs?limit={PAGE}&offset={offset}"
            status, page = await get(conn, path)
            if page is None:
                last_problem[job] = f"job runs: {status}"
                return False
            seen.update((r["id"], r["state"]) for r in page["runs"])
            total = page["totalCount"]
            offset += PAGE
            if offset >= total or not page["runs"]:
                break
        done = sum(1 for r in want if seen.get(r) == "COMPLETED")
        last_problem[job] = f"{done} of {len(want)} runs COMPLETED, {total} runs listed"
        return done == len(want) and total == len(want)

    async def worker(conn: Connection, queue: list[str], pending: set[str]) -> None:
        nonlocal confirmed_at
        while queue:
            job = queue.pop()
            try:
                ok = await check(conn, job)
            except (OSError, asyncio.IncompleteReadError, ValueError, KeyError) as e:
                last_problem[job] = f"{type(e).__name__}: {e}"
                ok = False
            if ok:
                confirmed_at = max(confirmed_at, time.perf_counter())
                pending.discard(job)

    async def read_all(pending: set[str]) -> None:
        queue = sorted(pending)
        await asyncio.gather(*(worker(c, queue, pending) for c in conns))

    while sentinel and time.perf_counter() < deadline:
        try:
            _, run = await get(conns[0], f"/api/v1/jobs/runs/{sentinel}")
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            run = {"state": f"{type(e).__name__}: {e}"}
        if run is not None and run["state"] == "COMPLETED":
            break
        # Finer than 2% of the wait so far, and rare enough to take little server time.
        await asyncio.sleep(max(POLL_S, (time.perf_counter() - began) / 50))
    pending = {"", *expected}  # "" stands for the total number of jobs in the namespace
    while pending and (not passes or time.perf_counter() < deadline):
        passes += 1
        t0 = time.perf_counter()
        await read_all(pending)
        if pending:
            await asyncio.sleep(max(POLL_S, time.perf_counter() - t0))
    complete, visible_at, timed_reads = not pending, confirmed_at, reads
    problems = [f"{j or 'namespace'}: {last_problem.get(j)}" for j in sorted(pending)[:3]]
    pass_ms = float("nan")
    if complete:
        # What one read-back pass costs once everything is visible: the part of the lag
        # that is the check itself, not the server catching up. Untimed for the figures.
        t0 = time.perf_counter()
        await read_all({"", *expected})
        pass_ms = (time.perf_counter() - t0) * 1000
    return {
        "complete": complete,
        "confirmed_at": visible_at,
        "reads": timed_reads,
        "passes": passes,
        "read_back_pass_ms": pass_ms,
        "runs_checked": sum(len(v) for v in expected.values()),
        "jobs_checked": len(expected),
        "runs_not_visible": sum(len(expected[j]) for j in pending if j),
        "problems": problems,
    }


def drive(
    ports: list[int], runs: list[list[bytes]], clients: int, batch: int, jobs_total: int,
    visible_timeout: float = 60.0,
) -> dict[str, Any]:  # fmt: skip
    """Send every event once, then read back until all runs are visible.

    ``batch`` 0 means one event per request; ``jobs_total`` is the number of jobs the
    namespace should hold once these runs are in. Client ``k`` talks to replica
    ``k % len(ports)``, as a load balancer spreading connections would; a run's two
    events go through one client, so one replica.
    """
    host = "127.0.0.1"
    shards = [runs[i::clients] for i in range(clients)]
    requests: list[list[bytes]] = []
    for shard in shards:
        # A run's START before its COMPLETE, as a producer would send them.
        events = [ev for run in shard for ev in run]
        if batch == 0:
            requests.append([_request("POST", "/api/v1/lineage", host, ev) for ev in events])
        else:
            requests.append([
                _request("POST", "/api/v1/lineage/batch", host,
                         b"[" + b",".join(events[i : i + batch]) + b"]")
                for i in range(0, len(events), batch)
            ])  # fmt: skip
    expected = _expected(runs)
    errors: list[str] = []

    async def go() -> tuple[float, float, list[float], dict[str, Any]]:
        conns = [Connection(ports[k % len(ports)]) for k in range(clients)]
        try:
            start, last, lat = await _load(conns, requests, batch, errors)
            acked = time.perf_counter()
            sentinel = json.loads(shards[last][-1][-1])["run"]["runId"] if shards[last] else ""
            seen = await _visible(conns, host, expected, jobs_total, sentinel, visible_timeout)
        finally:
            for c in conns:
                c.close()
        return start, acked, lat, seen

    gc.collect()
    gc.freeze()  # the pre-built requests and events are not scanned by collections
    cpu_before = cpu_by_kind()
    try:
        start, acked, lat, seen = _run(go())
    finally:
        gc.unfreeze()
    cpu_after = cpu_by_kind()
    cpu = {kind: round(cpu_after[kind] - cpu_before[kind], 3) for kind in cpu_after}
    events = sum(len(r) for r in runs)
    elapsed = acked - start
    visible = seen["confirmed_at"] - start if seen["complete"] else float("nan")
    s = summary(lat) if lat else dict.fromkeys(["n", "p50", "p95", "p99"], float("nan"))
    return {
        "events": events,
        "requests": len(lat),
        "seconds": round(elapsed, 3),
        "events_per_s": events / elapsed,
        "visible_seconds": round(visible, 3),
        "visible_events_per_s": events / visible,
        "visible_lag_ms": (visible - elapsed) * 1000,
        "visibility_check": {k: v for k, v in seen.items() if k != "confirmed_at"},
        # Until every run reads back, on every process of the machine, by kind.
        "cpu_seconds": cpu,
        "cpu_us_per_event": sum(cpu.values()) / events * 1e6,
        "request_ms": s,
        "errors": len(errors),
        "first_errors": errors[:3],
    }


def profile(backend: str, events: int, seed: int, top: int) -> str:
    """Ingest ``events`` in process under cProfile; the report as text."""
    from sqlalchemy import event as sa_event

    from strata.lineage.record.apply import record_event
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
            record_event(engine, p)
        prof.disable()
        elapsed = time.perf_counter() - t0
        engine.dispose()
    buf = io.StringIO()
    buf.write(
        f"in-process record_event, {backend}: {len(payloads)} events in {elapsed:.1f} s "
        f"({len(payloads) / elapsed:.0f} events/s under cProfile), "
        f"{statements / len(payloads):.0f} SQL statements per event\n"
    )
    stats = pstats.Stats(prof, stream=buf)
    stats.sort_stats("cumulative").print_stats("strata/", top)
    return buf.getvalue()


def measure(a: argparse.Namespace, modes: list[str], replicas: int) -> dict[str, Any]:
    """Each mode's figures with ``replicas`` servers on one fresh store."""
    results: dict[str, Any] = {}
    with store(a.backend) as (url, home), servers(url, home, replicas) as ports:
        jobs: set[str] = set()
        # Each phase (warm-up, then each mode) happens after the one before, as a
        # producer's events do. Phases that started at the same moment made a later phase's
        # outputs versions older than an earlier phase's reads, and folding them moved those
        # reads to the new versions: a late-arrival workload, not the steady ingest measured
        # here (it made a mode run after another look several times slower).
        clock = BASE
        warm = make_runs(a.warmup // 2, a.jobs, a.datasets, a.seed, "warm", clock)
        clock += timedelta(seconds=len(warm) + 60)
        jobs |= _expected(warm).keys()
        if warm:
            drive(ports, warm, a.clients, 0, len(jobs), a.visible_timeout)
        for n, mode in enumerate(modes):
            runs = make_runs(a.events // 2, a.jobs, a.datasets, a.seed + 1 + n, mode, clock)
            clock += timedelta(seconds=len(runs) + 60)
            jobs |= _expected(runs).keys()
            print(
                f"{replicas} server(s), {mode}: sending {a.events} events from {a.clients} "
                "clients ...",
                flush=True,
            )
            results[mode] = drive(
                ports, runs, a.clients, 0 if mode == "single" else a.batch, len(jobs),
                a.visible_timeout,
            )  # fmt: skip
    return results


def against(a: argparse.Namespace, modes: list[str]) -> None:
    """This checkout's server and ``--against``'s, one server each, ``--rounds`` rounds
    alternating which goes first; the medians of each mode's rates and their ratios."""
    import statistics
    import sys

    command = [sys.executable, __file__, "--backend", a.backend, "--events", str(a.events)]
    command += ["--clients", str(a.clients), "--batch", str(a.batch), "--modes", a.modes]
    command += ["--seed", str(a.seed)]

    def report(r: int, side: str, doc: dict[str, Any]) -> None:
        got = doc["results"]
        rates = ", ".join(f"{m} {got[m]['visible_events_per_s']:,.0f}" for m in modes)
        print(f"round {r + 1} {side}: visible events/s {rates}", flush=True)

    docs = checkouts_alternating(a.against, a.rounds, command, "--out", report)

    def median(side: str, mode: str, key: str) -> float:
        return statistics.median(doc["results"][mode][key] for doc in docs[side])

    rows = []
    for mode in modes:
        for key in ("visible_events_per_s", "events_per_s"):
            now, then = median("now", mode, key), median("against", mode, key)
            label = "visible" if key.startswith("visible") else "ack"
            rows.append([mode, label, now, then, now / then])
    print_table(
        f"lineage ingest over HTTP, {a.backend}, {a.rounds} rounds a side (medians)",
        ["mode", "events/s", "now", "against", "now / against"],
        rows,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--backend", choices=["sqlite", "postgresql"], default="postgresql")
    p.add_argument(
        "--events",
        type=int,
        default=4000,
        help="events per mode, START+COMPLETE pairs (default 4000)",
    )
    p.add_argument(
        "--clients", type=int, default=8, help="concurrent client connections (default 8)"
    )
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
    p.add_argument(
        "--visible-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="seconds to wait after the load for every run to read back (default 60)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--out", default=None, help="JSON path (default bench/.out/lineage_ingest-<backend>.json)"
    )
    p.add_argument(
        "--replicas",
        default="1",
        help="servers on the one store, e.g. 1,2 to measure one then two side by side "
        "(default 1; more than one needs PostgreSQL)",
    )
    p.add_argument(
        "--against",
        metavar="SRC",
        help="also another checkout's src: each side in a fresh process, alternating",
    )
    p.add_argument("--rounds", type=int, default=4, help="with --against: rounds (default 4)")
    a = p.parse_args()
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if a.against:
        against(a, modes)
        return
    counts = [int(n) for n in a.replicas.split(",")]
    if a.backend == "sqlite" and max(counts) > 1:
        p.error("a SQLite store takes one server; use --backend postgresql for replicas")
    results: dict[str, Any] = {"backend": a.backend, "clients": a.clients, "cpus": os.cpu_count()}
    # In the order given (``1,2,1`` measures one server again after two, for the noise).
    measured = [(n, measure(a, modes, n)) for n in counts]
    results.update(measured[0][1])  # the figures of the first count, as before
    results["replicas"] = [{"replicas": n, **r} for n, r in measured]
    rows = []
    for n, mode, r in ((n, m, r[m]) for n, r in measured for m in modes):
        v, ms = r["visibility_check"], r["request_ms"]
        rows.append([
            n, mode if mode == "single" else f"batch of {a.batch}", r["events"], r["requests"],
            r["seconds"], r["events_per_s"], r["visible_seconds"], r["visible_events_per_s"],
            r["visible_lag_ms"], v["read_back_pass_ms"], ms["p50"], ms["p95"], ms["p99"],
            r["errors"] + v["runs_not_visible"], r["cpu_us_per_event"],
            *(r["cpu_seconds"][k] / r["events"] * 1e6 for k in CPU_KINDS),
        ])  # fmt: skip
    print_table(
        f"lineage ingest over HTTP, {a.backend}, {a.clients} clients, {os.cpu_count()} cores "
        "shared by clients, servers and database",
        ["replicas", "mode", "events", "requests", "ack s", "ack events/s", "visible s",
         "visible events/s", "lag ms", "pass ms", "p50 ms", "p95 ms", "p99 ms", "errors",
         "CPU µs/ev", *(f"{k} µs" for k in CPU_KINDS)],
        rows,
    )  # fmt: skip
    print(
        "ack: until the last response; visible: until every run reads back COMPLETED; lag: "
        "visible - ack, which includes the reads; pass: one read-back pass once all is "
        "visible; errors: failed requests + runs not visible; CPU: every process's, per "
        "event, until every run reads back, in all and by kind (bench: the clients)"
    )
    for n, mode, r in ((n, m, r[m]) for n, r in measured for m in modes):
        v = r["visibility_check"]
        if not v["complete"] or r["errors"]:
            print(f"{n} x {mode}: {r['first_errors']} {v['problems']}")
    if "single" in results:
        eps = results["single"]["visible_events_per_s"]
        met = eps >= TARGET_SINGLE  # False when not everything became visible (NaN)
        results["target_single_events_per_s"] = TARGET_SINGLE
        results["target_met"] = met
        print(
            f"\ntarget: single >= {TARGET_SINGLE:,.0f} visible events/s -> "
            f"{'met' if met else 'NOT met'} ({eps:,.0f} events/s)"
        )
    if "single" in results and "batch" in results:
        one, many = results["single"], results["batch"]
        higher = many["visible_events_per_s"] > one["visible_events_per_s"]
        results["target_batch_above_single_met"] = higher
        print(
            f"target: batch above single -> {'met' if higher else 'NOT met'} "
            f"({many['visible_events_per_s']:,.0f} vs {one['visible_events_per_s']:,.0f} "
            "visible events/s)"
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
