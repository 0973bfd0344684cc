"""Commit latency with the files already written: only ``txn.commit()`` is timed.

Each round starts a transaction, writes a small pyarrow table (one container),
then times ``commit()`` alone. Reports p50/p99 per metadata store.
"""

from __future__ import annotations

import gc
import time

from _common import (
    backends,
    now_ms,
    ok,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    summary,
    write_json,
)

TARGET_P50_MS = 5.0


def run(backend: str, commits: int, rows: int, warmup: int, kind: str) -> dict[str, object]:
    import pyarrow as pa

    table = pa.table({"id": pa.array(range(rows), pa.int64()), "v": pa.array([0.5] * rows)})
    times: list[float] = []
    cpu: list[float] = []
    with scratch_dir("commit") as home, open_lake(backend, home) as lake:
        for i in range(warmup + commits):
            txn = lake.transaction("bench/commits", type=kind)
            txn.write(table)
            gc.collect()
            c0 = time.thread_time()
            t0 = now_ms()
            txn.commit()
            elapsed = now_ms() - t0
            spent = (time.thread_time() - c0) * 1000.0
            if i >= warmup:
                times.append(elapsed)
                cpu.append(spent)
        assert lake.version("bench/commits").commit_id == warmup + commits
    s = summary(times)
    tenth = max(1, len(times) // 10)
    s["p50_first_10pct"] = summary(times[:tenth])["p50"]
    s["p50_last_10pct"] = summary(times[-tenth:])["p50"]
    # CPU time of this thread: what the commit costs here, without waits for a busy CPU
    # (or, on PostgreSQL, for the server).
    s["cpu_p50"] = summary(cpu)["p50"]
    return {"backend": backend, "type": kind, **s}


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--commits", type=int, default=500, help="timed commits (default 500)")
    p.add_argument("--warmup", type=int, default=20, help="untimed commits first (default 20)")
    p.add_argument("--rows", type=int, default=100, help="rows per container (default 100)")
    p.add_argument("--type", default="APPEND", choices=["APPEND", "SNAPSHOT"])
    a = p.parse_args()
    results = [run(b, a.commits, a.rows, a.warmup, a.type) for b in backends(a.backend)]
    print_table(
        f"commit latency, {a.commits} {a.type} commits of one container each (ms, commit() only)",
        [
            "backend",
            "p50",
            "p90",
            "p99",
            "max",
            "p50 first 10%",
            "p50 last 10%",
            "client CPU p50",
            "p50 < 5 ms",
        ],
        [
            [
                r["backend"],
                r["p50"],
                r["p90"],
                r["p99"],
                r["max"],
                r["p50_first_10pct"],
                r["p50_last_10pct"],
                r["cpu_p50"],
                ok(float(r["p50"]) < TARGET_P50_MS),  # type: ignore[arg-type]
            ]
            for r in results
        ],
    )
    write_json("commit_latency", a.json, vars(a), results)


if __name__ == "__main__":
    main()
