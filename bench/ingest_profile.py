"""OpenLineage ingest throughput, in-process: single events and batches, both backends.

Events are realistic run pairs (START then COMPLETE) of jobs that read and write
1-3 datasets from a shared pool, outputs carrying a schema facet, so consumers
bind versions other runs produced. ``--shuffle`` delivers them in random order
(the slow, re-folding path); ``--profile`` prints the top of a cProfile.

``--mode fold`` measures the server's fold alone: the events are queued first (as the
server acknowledges them, in batches of 100), then folded by ``fold_pending`` in groups
of ``--batch`` until the queue is empty, with the collector off as in the fold process.
It also reports how long the writer lock was held, from taking it to the commit. With
``--against SRC`` (another checkout's ``src``) each of ``--rounds`` rounds folds with this
checkout's code and with that one's, each in a fresh process, alternating which goes
first, and reports the medians and their ratio.

    .venv/bin/python bench/ingest_profile.py --events 2000 --backend both
    .venv/bin/python bench/ingest_profile.py --mode fold --events 16000 --batch 2000
    .venv/bin/python bench/ingest_profile.py --mode fold --events 16000 --batch 2000 \
        --backend postgresql --rounds 6 --against /tmp/base/src
"""

from __future__ import annotations

import cProfile
import io
import pstats
import random
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    backends,
    checkouts_alternating,
    parser,
    pg_database,
    print_table,
    scratch_dir,
    write_json,
)

PRODUCER = "https://example.com/bench"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _facet(**fields: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": PRODUCER + "/facet", **fields}


def make_events(n_events: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    datasets = [("warehouse", f"db.table_{i:03d}") for i in range(150)]
    jobs = [f"etl.job_{i:02d}" for i in range(40)]
    events: list[dict[str, Any]] = []
    clock = T0
    for i in range(n_events // 2):
        job = rng.choice(jobs)
        run_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        picked = rng.sample(datasets, rng.randint(2, 6))
        split = rng.randint(1, len(picked) - 1)
        inputs = [{"namespace": ns, "name": name} for ns, name in picked[:split][:3]]
        outputs = [
            {
                "namespace": ns,
                "name": name,
                "facets": {
                    "schema": _facet(fields=[{"name": f"c{k}", "type": "STRING"} for k in range(6)])
                },
            }
            for ns, name in picked[split:][:3]
        ]
        job_facets = {"sourceCodeLocation": _facet(type="git", url=f"https://git/{job}.py")}
        clock += timedelta(seconds=1)
        start_at, end_at = clock, clock + timedelta(seconds=30 + i % 7)
        for kind, when in (("START", start_at), ("COMPLETE", end_at)):
            events.append(
                {
                    "eventType": kind,
                    "eventTime": when.isoformat().replace("+00:00", "Z"),
                    "run": {
                        "runId": run_id,
                        "facets": {"nominalTime": _facet(nominalStartTime="2024-01-01T00:00:00Z")},
                    },
                    "job": {"namespace": "bench", "name": job, "facets": job_facets},
                    "inputs": inputs,
                    "outputs": outputs,
                    "producer": PRODUCER,
                    "schemaURL": SCHEMA_URL,
                }
            )
    events.sort(key=lambda e: e["eventTime"])
    return events


@contextmanager
def store(backend: str) -> Iterator[Any]:
    from strata.store import migrate
    from strata.store.engine import create_engine

    if backend == "sqlite":
        with scratch_dir("ingest") as tmp:
            engine = create_engine(f"sqlite:///{tmp / 'meta.db'}")
            migrate.upgrade(engine)
            try:
                yield engine
            finally:
                engine.dispose()
        return
    with pg_database() as url:
        engine = create_engine(url)
        migrate.upgrade(engine)
        try:
            yield engine
        finally:
            engine.dispose()


def run_once(
    backend: str, events: list[dict[str, Any]], mode: str, batch: int, profile: bool, window: int
) -> tuple[float, float, float]:
    """Overall events/s, and events/s over the first and the last ``window`` events."""
    from strata.lineage.record.apply import record_batch, record_event

    step = 1 if mode == "single" else batch
    window = max(step, min(window, len(events)) // step * step)
    with store(backend) as engine:
        prof = cProfile.Profile() if profile else None
        marks = [time.perf_counter()]
        if prof:
            prof.enable()
        for i in range(0, len(events), step):
            if mode == "single":
                record_event(engine, events[i])
            else:
                for result in record_batch(engine, events[i : i + batch]):
                    if isinstance(result, Exception):
                        raise result
            marks.append(time.perf_counter())
        if prof:
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
            print(out.getvalue())
        calls = window // step
        first = window / (marks[calls] - marks[0])
        last = window / (marks[-1] - marks[-1 - calls])
        return len(events) / (marks[-1] - marks[0]), first, last


def fold_once(backend: str, events: list[dict[str, Any]], group: int) -> dict[str, float]:
    """Queue ``events`` where the server queues them, then fold them in groups of
    ``group``: events/s, CPU seconds, and the share of the fold's time the writer lock was
    held (PostgreSQL's advisory lock; SQLite's write lock is held from BEGIN)."""
    import gc

    from strata.lineage.record import apply
    from strata.lineage.record.events import parse_event
    from strata.store.journal import journal_for

    parsed = [parse_event(e) for e in events]
    locked: list[float] = []
    real_lock = apply.lock_writers

    def timed_lock(conn: Any) -> None:
        real_lock(conn)
        locked.append(time.perf_counter())

    with store(backend) as engine:
        journal = journal_for(engine)
        for i in range(0, len(parsed), 100):
            apply.accept_parsed(engine, journal, list(parsed[i : i + 100]))
        gc.collect()
        gc.freeze()
        gc.disable()
        apply.lock_writers = timed_lock
        try:
            held, began, cpu = 0.0, time.perf_counter(), time.process_time()
            while True:
                taken = len(locked)
                folded = apply.fold_pending(engine, journal, group)
                if len(locked) > taken:
                    held += time.perf_counter() - locked[-1]
                if not len(folded):
                    break
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        finally:
            apply.lock_writers = real_lock
            gc.enable()
    return {
        "events_per_s": len(events) / wall,
        "wall_s": wall,
        "cpu_s": cpu,
        "lock_held_us_per_event": 1e6 * held / len(events),
        "lock_held_share": held / wall,
    }


def fold_against(backend: str, args: Any) -> dict[str, Any]:
    """The fold of ``--events`` in ``--rounds`` rounds, this checkout's code and
    ``--against``'s each in a fresh process per round, alternating which goes first."""
    import statistics

    command = [sys.executable, __file__, "--mode", "fold", "--backend", backend]
    command += ["--events", str(args.events), "--batch", str(args.batch), "--seed", str(args.seed)]

    def report(r: int, side: str, doc: dict[str, Any]) -> None:
        print(
            f"round {r + 1} {side}: {doc['results'][0]['events_per_s']:,.0f} events/s", flush=True
        )

    docs = checkouts_alternating(args.against, args.rounds, command, "--json", report)
    runs = {side: [doc["results"][0] for doc in got] for side, got in docs.items()}

    def median(side: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[side])

    keys = ("events_per_s", "cpu_s")
    medians = {f"{side}_{key}": median(side, key) for side in runs for key in keys}
    return {"backend": backend, "runs": runs, **medians}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--batch", type=int, default=100, help="events per record_batch call")
    p.add_argument("--mode", choices=["single", "batch", "both", "fold"], default="both")
    p.add_argument("--shuffle", action="store_true", help="deliver events in random order")
    p.add_argument("--profile", action="store_true")
    p.add_argument(
        "--window", type=int, default=1000, help="also report the first and last N events' rate"
    )
    p.add_argument("--against", metavar="SRC", help="fold mode: also another checkout's src")
    p.add_argument("--rounds", type=int, default=6, help="fold mode with --against: rounds")
    args = p.parse_args()
    if args.mode == "fold" and args.against:
        pairs = [fold_against(b, args) for b in backends(args.backend)]
        print_table(
            f"fold of {args.events} queued events, {args.rounds} rounds a side (medians)",
            ["backend", "now ev/s", "against ev/s", "now / against", "now CPU s", "against CPU s"],
            [
                [
                    r["backend"],
                    r["now_events_per_s"],
                    r["against_events_per_s"],
                    f"{r['now_events_per_s'] / r['against_events_per_s']:.3f}",
                    r["now_cpu_s"],
                    r["against_cpu_s"],
                ]
                for r in pairs
            ],
        )
        write_json("ingest_profile_against", args.json, vars(args), pairs)
        return
    events = make_events(args.events, args.seed)
    if args.shuffle:
        random.Random(args.seed).shuffle(events)
    if args.mode == "fold":
        folds = [(b, fold_once(b, events, args.batch)) for b in backends(args.backend)]
        print_table(
            f"fold of {len(events)} queued events in groups of {args.batch}",
            ["backend", "events/s", "wall s", "CPU s", "lock µs/event", "lock share"],
            [
                [
                    b,
                    r["events_per_s"],
                    r["wall_s"],
                    r["cpu_s"],
                    r["lock_held_us_per_event"] if b == "postgresql" else "—",
                    f"{100 * r['lock_held_share']:.0f} %" if b == "postgresql" else "—",
                ]
                for b, r in folds
            ],
        )
        write_json("ingest_profile", args.json, vars(args), [{"backend": b, **r} for b, r in folds])
        return
    modes = ["single", "batch"] if args.mode == "both" else [args.mode]
    results = []
    for backend in backends(args.backend):
        for mode in modes:
            rate, first, last = run_once(
                backend, events, mode, args.batch, args.profile, args.window
            )
            results.append(
                {
                    "backend": backend,
                    "mode": mode,
                    "events_per_s": rate,
                    "first_window_per_s": first,
                    "last_window_per_s": last,
                }
            )
    print_table(
        f"ingest of {len(events)} events ({'shuffled' if args.shuffle else 'in order'}); "
        f"first/last = rate over the first/last {args.window} events",
        ["backend", "mode", "events/s", "first", "last"],
        [
            [
                r["backend"],
                r["mode"],
                r["events_per_s"],
                r["first_window_per_s"],
                r["last_window_per_s"],
            ]
            for r in results
        ],
    )
    write_json("ingest_profile", args.json, vars(args), results)


if __name__ == "__main__":
    main()
