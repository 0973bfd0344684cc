"""Build overhead per transform: a 10-transform chain built by Strata against the same
Spark code run by hand in the same session.

By hand: each step reads the previous step's Parquet folder, applies the step's function
and writes a folder of its own (``df.write.parquet``). Strata: ``BuildService.build`` of
the chain's end with ``force`` (every transform runs): program registration, exact input
resolution, START/COMPLETE events through the in-process ingest, the transaction with
its data fingerprint, the catalog. The two alternate, ``--rounds`` times each; the
figure is (Strata - by hand) / transforms, per round.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, summary, write_json

PIPELINE = """
from pyspark.sql import functions as F

from strata import Input, Output, transform_df


def step(i):
    source = "raw/events" if i == 0 else "chain/s%d" % (i - 1)

    @transform_df(Output("chain/s%d" % i), df=Input(source))
    def compute(df):
        return df.withColumn("v", F.col("v") + 1).filter(F.col("k") >= 0)

    return compute


for _i in range({n}):
    globals()["s%d" % _i] = step(_i)
"""


def by_hand(spark: Any, source: str, folder: Path, n: int) -> float:
    from pyspark.sql import functions as F  # noqa: N812

    t0 = time.monotonic()
    previous = source
    for i in range(n):
        df = spark.read.parquet(previous)
        out = df.withColumn("v", F.col("v") + 1).filter(F.col("k") >= 0)
        target = str(folder / f"s{i}")
        out.write.parquet(target)
        previous = target
    return time.monotonic() - t0


def measure(backend: str, n: int, rows: int, rounds: int) -> dict[str, Any]:
    import pyarrow as pa

    from strata.builds.service import BuildService
    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("overhead") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "chain.py").write_text(PIPELINE.format(n=n))
        table = pa.table({"k": list(range(rows)), "v": [1.0] * rows})
        with lake.transaction("raw/events", type="SNAPSHOT") as txn:
            txn.write(table)
        settings = Settings(home=home, database_url=lake.settings.database_url)
        service = BuildService(settings, [str(folder)], lake=lake)
        spark = get_spark(settings)
        source = lake.storage.spark_uri(lake.files("raw/events")[0].path)
        service.build([f"chain/s{n - 1}"], force=True)  # warm up both paths once
        by_hand(spark, source, home / "warm", n)
        hand_s, strata_s = [], []
        for r in range(rounds):
            out = home / f"hand{r}"
            if r % 2:
                hand_s.append(by_hand(spark, source, out, n))
                strata_s.append(_strata(service, n))
            else:
                strata_s.append(_strata(service, n))
                hand_s.append(by_hand(spark, source, out, n))
            shutil.rmtree(out, ignore_errors=True)
    per = [(s - h) / n for s, h in zip(strata_s, hand_s, strict=True)]
    return {
        "backend": backend,
        "transforms": n,
        "rows": rows,
        "hand_s": summary(hand_s),
        "strata_s": summary(strata_s),
        "overhead_per_transform_s": summary(per),
    }


def _strata(service: Any, n: int) -> float:
    t0 = time.monotonic()
    report = service.build([f"chain/s{n - 1}"], force=True)
    took = time.monotonic() - t0
    assert [s.outcome for s in report.steps] == ["built"] * n, report.to_dict()
    return took


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--transforms", type=int, default=10)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=6)
    args = p.parse_args()
    results = [measure(b, args.transforms, args.rows, args.rounds) for b in backends(args.backend)]
    print_table(
        "build overhead per transform (s)",
        ["backend", "transforms", "by hand p50", "strata p50", "overhead p50", "overhead max"],
        [
            (
                r["backend"],
                r["transforms"],
                r["hand_s"]["p50"],
                r["strata_s"]["p50"],
                r["overhead_per_transform_s"]["p50"],
                r["overhead_per_transform_s"]["max"],
            )
            for r in results
        ],
    )
    write_json("build_overhead", args.json, vars(args), results)


if __name__ == "__main__":
    main()
