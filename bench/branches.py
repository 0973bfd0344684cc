"""Branches: creating one costs the same whatever the number of datasets, and a merge
of many fast-forwarded datasets is one store transaction.

Two lakes side by side, one with a single dataset and one with ``--datasets`` of them:
each round creates a branch in both, alternating which goes first, and reports the
ratio of medians (target: about 1, i.e. O(1)). Then ``--merged`` datasets are appended
to on a branch and merged into main, timed and counted in SQL transactions (target:
one transaction, under a second). Last, a chain of ``--transforms`` is built whole on
main and on a branch, alternating (target: the branch within 10 % of main).
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


def _build(backend: str, transforms: int, rows: int, rounds: int) -> dict[str, Any]:
    """A chain of ``transforms`` built whole (``force``) on main and on a branch, the two
    alternating: the branch's time over main's."""
    import pyarrow as pa

    from build_overhead import PIPELINE
    from strata.builds.service import BuildService
    from strata.lake import branches
    from strata.settings import Settings

    with scratch_dir("branch-build") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "chain.py").write_text(PIPELINE.format(n=transforms))
        with lake.transaction("raw/events", type="SNAPSHOT") as txn:
            txn.write(pa.table({"k": list(range(rows)), "v": [1.0] * rows}))
        settings = Settings(home=home, database_url=lake.settings.database_url)
        on_main = BuildService(settings, [str(folder)], lake=lake)
        branches.create(lake.engine, "dev")
        on_dev = on_main.on_branch("dev")
        end = [f"chain/s{transforms - 1}"]

        def timed(service: Any) -> Any:
            def run(_: int) -> float:
                t0 = now_ms()
                report = service.build(end, force=True)
                assert [s.outcome for s in report.steps] == ["built"] * transforms
                return now_ms() - t0

            return run

        dev, main_ = alternate(timed(on_dev), timed(on_main), rounds, warmup=1)
        assert lake.on_branch("dev").version(end[0]).branch == "dev"
    d, m = summary(dev), summary(main_)
    return {
        "backend": backend,
        "transforms": transforms,
        "main_ms": m["p50"],
        "branch_ms": d["p50"],
        "ratio": d["p50"] / m["p50"],
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--datasets", type=int, default=10_000, help="datasets in the large lake")
    p.add_argument("--rounds", type=int, default=15, help="timed creates per lake")
    p.add_argument("--merged", type=int, default=100, help="datasets merged at once")
    p.add_argument("--transforms", type=int, default=10, help="transforms in the built chain")
    p.add_argument("--build-rounds", type=int, default=6, help="timed builds on each branch")
    p.add_argument("--only-build", action="store_true", help="measure the builds alone")
    a = p.parse_args()
    chosen = backends(a.backend)
    built = [_build(b, a.transforms, 1000, a.build_rounds) for b in chosen]
    print_table(
        f"a {a.transforms}-transform chain built whole, on a branch against on main (ms, median)",
        ["backend", "main", "branch", "ratio", "within 10 %"],
        [
            [r["backend"], r["main_ms"], r["branch_ms"], r["ratio"], ok(r["ratio"] <= 1.1)]
            for r in built
        ],
    )
    if a.only_build:
        write_json("branches", a.json, vars(a), {"build": built})
        return
    created = [_create_ratio(b, a.datasets, a.rounds) for b in chosen]
    merged = [_merge(b, a.merged) for b in chosen]
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
    write_json("branches", a.json, vars(a), {"create": created, "merge": merged, "build": built})


if __name__ == "__main__":
    main()
