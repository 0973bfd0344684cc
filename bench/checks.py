"""Data checks' cost: a build of a 5M-row output with five checks against the same
build without them.

Two transforms read one raw dataset and write the same rows; one declares five checks
on its output (a primary key, a null check, a range, a row count and a SQL condition).
Both are built with ``force``, alternating which goes first each round; the figure is
the ratio of their build times (target: checked / plain <= 1.3). The checks read the
written Parquet files once, in one aggregation (the key as a grouping set).
"""

from __future__ import annotations

import time
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, side_by_side, write_json

PIPELINE = """
from pyspark.sql import functions as F

from strata import Check, Input, Output, transform_df
from strata import expectations as E

CHECKS = [
    Check(E.primary_key("id"), "id is a key"),
    Check(E.not_null("k"), "k is set"),
    Check(E.col("v").between(0, 10**12), "v in range"),
    Check(E.row_count().gt(0), "not empty"),
    Check(E.sql("v >= k OR k < 0"), "v at least k"),
]


@transform_df(Output("out/plain"), df=Input("raw/events"))
def plain(df):
    return df.withColumn("v", F.col("v") + 1)


@transform_df(Output("out/checked", checks=CHECKS), df=Input("raw/events"))
def checked(df):
    return df.withColumn("v", F.col("v") + 1)
"""


def measure(backend: str, rows: int, rounds: int) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812

    from strata.builds.service import BuildService
    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("checks") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "bench_checks.py").write_text(PIPELINE)
        settings = Settings(home=home, database_url=lake.settings.database_url)
        spark = get_spark(settings)
        raw = spark.range(rows).select(
            F.col("id"), (F.col("id") % 1000).alias("k"), (F.col("id") * 3).alias("v")
        )
        with lake.transaction("raw/events", type="SNAPSHOT") as txn:
            txn.write(raw)
        service = BuildService(settings, [str(folder)], lake=lake)

        def build(name: str) -> float:
            t0 = time.monotonic()
            report = service.build([name], force=True)
            took = time.monotonic() - t0
            assert [s.outcome for s in report.steps] == ["built"], report.to_dict()
            return took

        build("out/plain"), build("out/checked")  # warm up both
        plain_s, checked_s = [], []
        for r in range(rounds):
            order = ("out/plain", "out/checked") if r % 2 else ("out/checked", "out/plain")
            for name in order:
                (plain_s if name == "out/plain" else checked_s).append(build(name))
        found = service.checks("out/checked")["results"]
        assert [x["outcome"] for x in found] == ["passed"] * 5, found
    return {
        "backend": backend,
        "rows": rows,
        **side_by_side(checked_s, plain_s, ("checked_s", "plain_s")),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=5_000_000)
    p.add_argument("--rounds", type=int, default=4)
    p.set_defaults(backend="sqlite")
    args = p.parse_args()
    results = [measure(b, args.rows, args.rounds) for b in backends(args.backend)]
    print_table(
        "a build with five checks against the same build without them (s)",
        ["backend", "rows", "plain p50", "checked p50", "ratio of medians", "paired ratio"],
        [
            (
                r["backend"],
                r["rows"],
                r["plain_s"]["p50"],
                r["checked_s"]["p50"],
                r["ratio_of_medians"],
                r["median_paired_ratio"],
            )
            for r in results
        ],
    )
    write_json("checks", args.json, vars(args), results)


if __name__ == "__main__":
    main()
