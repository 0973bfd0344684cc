"""Branches: creating one costs the same whatever the number of datasets, and a merge
of many fast-forwarded datasets is one store transaction.

Two lakes side by side, one with a single dataset and one with ``--datasets`` of them:
each round creates a branch in both, alternating which goes first, and reports the
ratio of medians (target: about 1, i.e. O(1)). Then ``--merged`` datasets are appended
to on a branch and merged into main, timed and counted in SQL transactions (target:
one transaction, under a second).
"""

from __future__ import annotations

import time
from typing import Any

from _common import (
    alternate,
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


def _fill(lake: Any, count: int, prefix: str) -> None:
    import pyarrow as pa

    one = pa.table({"x": pa.array([1], pa.int64())})
    for i in range(count):
        with lake.transaction(f"{prefix}/{i:05d}", "SNAPSHOT") as txn:
            txn.write(one)


def _create_ratio(backend: str, datasets: int, rounds: int) -> dict[str, Any]:
    from strata.lake import branches

    with (
        scratch_dir("branch-one") as h1,
        scratch_dir("branch-many") as h2,
        open_lake(backend, h1) as small,
        open_lake(backend, h2) as large,
    ):
        _fill(small, 1, "one")
        _fill(large, datasets, "many")

        def create(lake: Any) -> Any:
            def timed(i: int) -> float:
                t0 = now_ms()
                branches.create(lake.engine, f"b{i}")
                return now_ms() - t0

            return timed

        many, single = alternate(create(large), create(small), rounds, warmup=3)
    m, s = summary(many), summary(single)
    return {
        "backend": backend,
        "datasets": datasets,
        "create_ms_many": m["p50"],
        "create_ms_one": s["p50"],
        "ratio": m["p50"] / s["p50"],
    }


def _merge(backend: str, merged: int) -> dict[str, Any]:
    import dataclasses

    import pyarrow as pa
    from sqlalchemy import event

    from strata.lake import branches
    from strata.lake.merge import merge
    from strata.lake.service import Lake

    with scratch_dir("branch-merge") as home, open_lake(backend, home) as lake:
        _fill(lake, merged, "m")
        branches.create(lake.engine, "dev")
        dev = Lake(dataclasses.replace(lake.settings, branch="dev"), lake.engine)
        extra = pa.table({"x": pa.array([2], pa.int64())})
        for i in range(merged):
            with dev.transaction(f"m/{i:05d}", "APPEND") as txn:
                txn.write(extra)
        begun: list[int] = []
        listener = lambda *_: begun.append(1)  # noqa: E731
        event.listen(lake.engine, "begin", listener)
        t0 = time.perf_counter()
        report = merge(lake.engine, "dev")
        seconds = time.perf_counter() - t0
        event.remove(lake.engine, "begin", listener)
        assert len(report.merged) == merged
        assert lake.version("m/00000").row_count == 2
    return {"backend": backend, "merged": merged, "seconds": seconds, "transactions": len(begun)}


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--datasets", type=int, default=10_000, help="datasets in the large lake")
    p.add_argument("--rounds", type=int, default=15, help="timed creates per lake")
    p.add_argument("--merged", type=int, default=100, help="datasets merged at once")
    a = p.parse_args()
    created = [_create_ratio(b, a.datasets, a.rounds) for b in backends(a.backend)]
    merged = [_merge(b, a.merged) for b in backends(a.backend)]
    print_table(
        f"create a branch: a lake of {a.datasets:,} datasets against one of 1 (ms, median)",
        ["backend", "many", "one", "ratio", "≈ O(1)"],
        [
            [
                r["backend"],
                r["create_ms_many"],
                r["create_ms_one"],
                r["ratio"],
                ok(r["ratio"] < 1.5),
            ]
            for r in created
        ],
    )
    print_table(
        f"merge {a.merged} fast-forwarded datasets",
        ["backend", "seconds", "SQL transactions", "< 1 s in one"],
        [
            [
                r["backend"],
                r["seconds"],
                r["transactions"],
                ok(r["seconds"] < 1 and r["transactions"] == 1),
            ]
            for r in merged
        ],
    )
    write_json("branches", a.json, vars(a), {"create": created, "merge": merged})


if __name__ == "__main__":
    main()
