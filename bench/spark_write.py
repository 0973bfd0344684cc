"""A large Spark write through a transaction against a plain ``df.write.parquet``.

One SparkSession (``strata.lake.spark.get_spark``), one cached DataFrame of
``--rows`` rows; each round writes it once through
``lake.transaction(..., type=SNAPSHOT)`` (start, write, commit) and once with
``df.write.parquet(new path)``, alternating which goes first. Outputs are
deleted between rounds, outside the timers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

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

TARGET_RATIO = 1.2  # the write with its data fingerprint, over a plain write
DATASET = "bench/spark_out"


def make_frame(spark: object, rows: int, partitions: int) -> object:
    from pyspark.sql import functions as F  # noqa: N812

    df = (
        spark.range(0, rows, numPartitions=partitions)  # type: ignore[attr-defined]
        .withColumn("user", F.concat(F.lit("user-"), (F.col("id") % 100_000).cast("string")))
        .withColumn("score", F.rand(7))
        .withColumn("clicks", (F.col("id") % 97).cast("int"))
        .withColumn(
            "ts", F.timestamp_seconds(F.lit(1_700_000_000) + (F.col("id") % 86_400).cast("long"))
        )
    )
    df = df.cache()
    df.count()
    return df


def run(
    backend: str, spark: object, df: object, rounds: int, warmup: int, kind: str
) -> dict[str, object]:
    with scratch_dir("spark") as home, open_lake(backend, home) as lake:
        plain_root = home / "plain"

        def strata_write() -> float:
            t0 = now_ms()
            with lake.transaction(DATASET, type=kind) as txn:
                txn.write(df)
            elapsed = now_ms() - t0
            for folder in {"/".join(f.path.split("/")[:2]) for f in lake.files(DATASET)}:
                shutil.rmtree(Path(lake.storage.local(folder)), ignore_errors=True)
            return elapsed

        def plain_write(i: int) -> float:
            target = plain_root / f"round-{i}"
            t0 = now_ms()
            df.write.parquet(target.as_uri())  # type: ignore[attr-defined]
            elapsed = now_ms() - t0
            shutil.rmtree(target, ignore_errors=True)
            return elapsed

        def report(i: int, s: float, p: float) -> None:
            print(f"  [{backend}] round {i + 1}: strata {s:,.0f} ms, plain {p:,.0f} ms", flush=True)

        strata_ms, plain_ms = alternate(
            lambda _i: strata_write(), plain_write, rounds, warmup, report
        )
        files = lake.version(DATASET).file_count
    return {
        "backend": backend,
        "type": kind,
        "rounds": rounds,
        "files_per_write": files,
        **side_by_side(strata_ms, plain_ms, ("strata", "plain")),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=5_000_000, help="rows (default 5,000,000)")
    p.add_argument("--partitions", type=int, default=4, help="DataFrame partitions (default 4)")
    p.add_argument("--rounds", type=int, default=8, help="timed rounds (default 8)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--type", default="SNAPSHOT", choices=["SNAPSHOT", "APPEND"])
    a = p.parse_args()

    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("spark-session") as tmp:
        spark = get_spark(Settings(home=tmp))
        t0 = now_ms()
        df = make_frame(spark, a.rows, a.partitions)
        print(f"cached {a.rows:,} rows in {(now_ms() - t0) / 1000:.1f} s")
        results = [run(b, spark, df, a.rounds, a.warmup, a.type) for b in backends(a.backend)]
        df.unpersist()  # type: ignore[attr-defined]
        spark.stop()  # type: ignore[attr-defined]
    print_table(
        f"Spark write of {a.rows:,} cached rows, {a.rounds} rounds alternating (ms)",
        [
            "backend",
            "files",
            "strata p50",
            "plain p50",
            "strata min",
            "plain min",
            "strata/plain",
            "paired ratio p50",
            "ratio <= 1.2",
        ],
        [
            [
                r["backend"],
                r["files_per_write"],
                r["strata"]["p50"],  # type: ignore[index]
                r["plain"]["p50"],  # type: ignore[index]
                r["strata"]["min"],  # type: ignore[index]
                r["plain"]["min"],  # type: ignore[index]
                r["ratio_of_medians"],
                r["median_paired_ratio"],
                ok(float(r["ratio_of_medians"]) <= TARGET_RATIO),  # type: ignore[arg-type]
            ]
            for r in results
        ],
    )
    write_json("spark_write", a.json, vars(a), results)


if __name__ == "__main__":
    main()
