"""Column lineage's cost: a 10-transform chain built with each output's column lineage
derived from its plan, against the same build with the derivation switched off.

Each step joins the previous one with a small dimension, filters and aggregates, so its
plan has a join, a filter, an aggregation and several computed columns. Both variants
build the chain's end with ``force`` in one process, alternating which goes first each
round; the figure is the ratio of their build times (target: with / without <= 1.05).
The derivation runs on a thread beside the output's write; its own time is reported too
(per transform, and as a share of the build, were it not overlapped).

A plan's lineage is kept by the plan's signature (``builds/columns/plan_cache.py``), so a
rebuild of the same plans derives nothing: the default measures that, the steady state
of a pipeline rebuilt on new data (here the ten steps even share one plan). ``--cold``
derives every output's lineage anew, as for programs never built before.
"""

from __future__ import annotations

import time
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, side_by_side, write_json

PIPELINE = """
from pyspark.sql import functions as F

from strata import Input, Output, transform_df


def step(i):
    source = "raw/events" if i == 0 else "chain/s%d" % (i - 1)

    @transform_df(Output("chain/s%d" % i), df=Input(source), dim=Input("raw/dim"))
    def compute(df, dim):
        joined = df.join(dim, "k").where(F.col("v") >= 0)
        return joined.groupBy("id", "k").agg(
            F.sum(F.col("v") + F.col("w")).alias("v"),
            F.max(F.when(F.col("w") > 1, F.col("label"))).alias("label"),
        ).select("id", "k", "v")

    return compute


for _i in range({n}):
    globals()["s%d" % _i] = step(_i)
"""


def measure(backend: str, rows: int, n: int, rounds: int, cold: bool) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812

    from strata.builds.columns import plan_cache, plan_lineage
    from strata.builds.execution import execute
    from strata.builds.service import BuildService
    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("colineage") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "chain.py").write_text(PIPELINE.format(n=n))
        settings = Settings(home=home, database_url=lake.settings.database_url)
        spark = get_spark(settings)
        events = spark.range(rows).select(
            "id", (F.col("id") % 50).alias("k"), (F.col("id") * 3).alias("v")
        )
        dim = spark.range(50).select(
            F.col("id").alias("k"), (F.col("id") % 3).alias("w"), F.lit("x").alias("label")
        )
        for name, frame in (("raw/events", events), ("raw/dim", dim)):
            with lake.transaction(name, type="SNAPSHOT") as txn:
                txn.write(frame)
        service = BuildService(settings, [str(folder)], lake=lake)
        derive, kept = execute.derive_lineage, plan_cache.derived
        spent: list[float] = []

        def timed(*args: Any) -> Any:
            t0 = time.monotonic()
            try:
                return derive(*args)
            finally:
                spent.append(time.monotonic() - t0)

        def build(with_lineage: bool) -> float:
            execute.derive_lineage = timed if with_lineage else (lambda *a: None)
            t0 = time.monotonic()
            report = service.build([f"chain/s{n - 1}"], force=True)
            took = time.monotonic() - t0
            assert [s.outcome for s in report.steps] == ["built"] * n, report.to_dict()
            return took

        if cold:  # every plan derived, none found: as for programs never built before
            plan_cache.derived = lambda state, plan, names: plan_lineage.derive_plan(plan, names)
        try:
            build(True), build(False)  # warm up both
            spent.clear()
            on, off = [], []
            for r in range(rounds):
                for with_lineage in (True, False) if r % 2 else (False, True):
                    (on if with_lineage else off).append(build(with_lineage))
        finally:
            execute.derive_lineage = derive
            plan_cache.derived = kept
    return {
        "backend": backend,
        "cold": cold,
        "rows": rows,
        "transforms": n,
        "derive_s_per_transform": sum(spent) / len(spent),
        "derive_share": sum(spent) / sum(on),
        **side_by_side(on, off, ("with_s", "without_s")),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--transforms", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--cold", action="store_true", help="derive every plan anew")
    p.set_defaults(backend="sqlite")
    args = p.parse_args()
    results = [
        measure(b, args.rows, args.transforms, args.rounds, args.cold)
        for b in backends(args.backend)
    ]
    print_table(
        "a 10-transform build with column lineage against the same build without it (s)",
        ["backend", "without p50", "with p50", "ratio", "paired", "derive/transform", "share"],
        [
            (
                r["backend"],
                r["without_s"]["p50"],
                r["with_s"]["p50"],
                r["ratio_of_medians"],
                r["median_paired_ratio"],
                r["derive_s_per_transform"],
                r["derive_share"],
            )
            for r in results
        ],
    )
    write_json("column_lineage", args.json, vars(args), results)


if __name__ == "__main__":
    main()
