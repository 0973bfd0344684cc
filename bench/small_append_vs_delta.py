"""Small appends end to end: Strata transactions against deltalake, interleaved.

Each round appends the same pyarrow table (``--rows`` rows) once through
``lake.transaction(..., type="APPEND")`` (start, write, commit) and once through
``deltalake.write_deltalake(path, table, mode="append")``; the order of the two
alternates every round so drift in machine load hits both alike.
"""

from __future__ import annotations

from _common import (
    alternate,
    backends,
    now_ms,
    ok,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    side_by_side,
    write_json,
)

TARGET_RATIO = 1.0


def make_table(rows: int, seed: int) -> object:
    import random

    import pyarrow as pa

    rnd = random.Random(seed)
    return pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "user": pa.array([f"user-{rnd.randrange(10_000)}" for _ in range(rows)]),
            "score": pa.array([rnd.random() for _ in range(rows)], pa.float64()),
            "clicks": pa.array([rnd.randrange(100) for _ in range(rows)], pa.int32()),
        }
    )


def run(backend: str, rounds: int, rows: int, warmup: int, seed: int) -> dict[str, object]:
    from deltalake import write_deltalake

    table = make_table(rows, seed)
    with scratch_dir("append") as home, open_lake(backend, home) as lake:
        delta_path = str(home / "delta" / "clicks")

        def strata_append() -> float:
            t0 = now_ms()
            with lake.transaction("bench/clicks", type="APPEND") as txn:
                txn.write(table)
            return now_ms() - t0

        def delta_append() -> float:
            t0 = now_ms()
            write_deltalake(delta_path, table, mode="append")
            return now_ms() - t0

        strata_ms, delta_ms = alternate(
            lambda _i: strata_append(), lambda _i: delta_append(), rounds, warmup
        )
        assert lake.version("bench/clicks").row_count == rows * (warmup + rounds)
    return {
        "backend": backend,
        "rows": rows,
        "rounds": rounds,
        **side_by_side(strata_ms, delta_ms, ("strata", "delta")),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rounds", type=int, default=200, help="timed rounds (default 200)")
    p.add_argument("--warmup", type=int, default=10, help="untimed rounds first (default 10)")
    p.add_argument("--rows", type=int, default=1000, help="rows per append (default 1000)")
    a = p.parse_args()
    results = [run(b, a.rounds, a.rows, a.warmup, a.seed) for b in backends(a.backend)]
    print_table(
        f"small append end to end, {a.rows} rows x {a.rounds} rounds, interleaved (ms)",
        [
            "backend",
            "strata p50",
            "strata p99",
            "delta p50",
            "delta p99",
            "strata/delta",
            "paired ratio p50",
            "ratio <= 1",
        ],
        [
            [
                r["backend"],
                r["strata"]["p50"],  # type: ignore[index]
                r["strata"]["p99"],  # type: ignore[index]
                r["delta"]["p50"],  # type: ignore[index]
                r["delta"]["p99"],  # type: ignore[index]
                r["ratio_of_medians"],
                r["median_paired_ratio"],
                ok(float(r["ratio_of_medians"]) <= TARGET_RATIO),  # type: ignore[arg-type]
            ]
            for r in results
        ],
    )
    write_json("small_append_vs_delta", a.json, vars(a), results)


if __name__ == "__main__":
    main()
