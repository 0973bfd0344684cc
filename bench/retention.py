"""Retention over a year of versions: bytes before and after, the time of a pass, and
reads unchanged by purging.

Two identical datasets each get ``--days`` days of ``--per-day`` hourly APPENDs, each
day starting with a SNAPSHOT of the whole table (through the real transaction API),
their commit times then spread back over the days (a year of history made in minutes).
A policy ``keep_days = 30, grace = "0s"`` governs the first only; one pass marks and
purges it. Then, interleaved round by round, the same reads of the two datasets: the
latest version's rows (pyarrow), the latest version's metadata, the history, and the
catalog entries `status` reads. Ratios purged / untouched near 1 show that purging
costs reads nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import (
    backends,
    interleaved_ops,
    now_ms,
    open_lake,
    parser,
    print_side_by_side,
    print_table,
    scratch_dir,
    write_json,
)

PURGED = "raw/purged"
KEPT = "keep/untouched"


def lake_bytes(lake: Any, dataset: str) -> int:
    uuid = lake.version(dataset).dataset_uuid
    root = Path(lake.storage.local(uuid))
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def build(lake: Any, dataset: str, days: int, per_day: int, rows: int) -> float:
    """``days`` days of history; returns the seconds the commits took."""
    import pyarrow as pa

    hour = pa.table({"id": pa.array(range(rows), pa.int64()), "v": pa.array([0.5] * rows)})
    day = pa.table(
        {"id": pa.array(range(rows * per_day), pa.int64()), "v": pa.array([0.5] * rows * per_day)}
    )
    t0 = now_ms()
    for d in range(days):
        with lake.transaction(dataset, type="SNAPSHOT") as txn:
            txn.write(day)
        for _ in range(per_day - 1):
            with lake.transaction(dataset, type="APPEND") as txn:
                txn.write(hour)
        if (d + 1) % 30 == 0:
            print(f"  {dataset}: {d + 1} days, {(now_ms() - t0) / 1000:.0f} s", flush=True)
    return (now_ms() - t0) / 1000


def spread_over_days(lake: Any, dataset: str, days: int, per_day: int) -> None:
    """Commit times one hour apart, the last one now: a year of history."""
    import sqlalchemy as sa

    from strata.store.schema import dataset_versions as dv

    uuid = lake.version(dataset).dataset_uuid
    total = days * per_day
    start = datetime.now(UTC) - timedelta(hours=total)
    with lake.engine.begin() as conn:
        conn.execute(
            dv.update()
            .where(dv.c.dataset_uuid == sa.bindparam("d"), dv.c.commit_id == sa.bindparam("c"))
            .values(created_at=sa.bindparam("at")),
            [{"d": uuid, "c": c, "at": start + timedelta(hours=c)} for c in range(1, total + 1)],
        )


def reads(lake: Any, rounds: int) -> dict[str, Any]:
    from strata.builds.state import BuildState

    state = BuildState(lake.engine, lake.namespace)
    ops = {
        "read latest (pyarrow)": lake.read_arrow,
        "version latest": lake.version,
        "history (every version)": lake.versions,
        "catalog entry (status)": lambda ds: state.current([ds]),
    }
    return interleaved_ops(ops, (PURGED, KEPT), ("purged", "untouched"), rounds)


def run(backend: str, days: int, per_day: int, rows: int, rounds: int) -> dict[str, Any]:
    from strata.retention.policies import Policy
    from strata.retention.service import Retention

    with scratch_dir("retention") as home, open_lake(backend, home) as lake:
        build_s = {ds: build(lake, ds, days, per_day, rows) for ds in (PURGED, KEPT)}
        for ds in (PURGED, KEPT):
            spread_over_days(lake, ds, days, per_day)
        before = lake_bytes(lake, PURGED)
        policy = Policy("raw", ("raw/*",), keep_days=30, grace_seconds=0)
        t0 = now_ms()
        report = Retention(lake, [policy]).run()
        pass_s = (now_ms() - t0) / 1000
        after = lake_bytes(lake, PURGED)
        return {
            "backend": backend,
            "versions": days * per_day,
            "build_s": build_s,
            "pass_s": pass_s,
            "purged_versions": report.count("purged"),
            "freed_files": report.freed_files,
            "bytes_before": before,
            "bytes_after": after,
            "reads_ms": reads(lake, rounds),
        }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--days", type=int, default=365, help="days of history (default 365)")
    p.add_argument("--per-day", type=int, default=24, help="versions a day (default 24)")
    p.add_argument("--rows", type=int, default=100, help="rows an hourly APPEND adds")
    p.add_argument("--rounds", type=int, default=30, help="rounds of each read")
    a = p.parse_args()
    results = [run(b, a.days, a.per_day, a.rows, a.rounds) for b in backends(a.backend)]
    for r in results:
        print_table(
            f"[{r['backend']}] {r['versions']:,} versions, keep_days = 30",
            ["what", "value"],
            [
                ["commits, s (each dataset)", r["build_s"][PURGED]],
                ["retention pass, s", r["pass_s"]],
                ["versions purged", r["purged_versions"]],
                ["files deleted", r["freed_files"]],
                ["MB on disk before", r["bytes_before"] / 1e6],
                ["MB on disk after", r["bytes_after"] / 1e6],
            ],
        )
        print_side_by_side(
            f"[{r['backend']}] reads, purged / untouched (ms, interleaved)",
            ("purged", "untouched"),
            r["reads_ms"],
        )
    write_json("retention", a.json, vars(a), results)


if __name__ == "__main__":
    main()
