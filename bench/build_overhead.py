"""Build overhead per transform: a 10-transform chain built by Strata against the same
Spark code run by hand in the same session.

By hand: each step reads the previous step's Parquet folder, applies the step's function
and writes a folder of its own (``df.write.parquet``). Strata: ``BuildService.build`` of
the chain's end with ``force`` (every transform runs): program registration, exact input
resolution, START/COMPLETE events through the in-process ingest, the transaction with
its data fingerprint, the catalog. The two alternate, ``--rounds`` times each; the
figure is (Strata - by hand) / transforms, per round.

``--cli`` measures from a shell instead, as a user runs it: ``strata build --all --force``
in a fresh process against a fresh ``python`` process that starts the same Spark session
(Strata's own settings) and runs the same code by hand. Both pay Python's and the JVM's
start; the difference, per transform, is what a transform costs in Strata beyond its
Spark work. Each side runs ``--rounds`` times, alternating. ``--against SRC`` also runs
another checkout's command (``PYTHONPATH=SRC``) in the same rounds, for a side-by-side
figure.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    backends,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    summary,
    user_env,
    write_json,
)

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
    return _result(backend, n, rows, hand_s, strata_s)


HAND_SCRIPT = """
import sys, time
from pathlib import Path
from pyspark.sql import functions as F
from strata.lake.spark import get_spark
from strata.settings import Settings

home, source, out, n = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
spark = get_spark(Settings(home=home))
previous = source
for i in range(n):
    df = spark.read.parquet(previous)
    target = str(out / ("s%d" % i))
    df.withColumn("v", F.col("v") + 1).filter(F.col("k") >= 0).write.parquet(target)
    previous = target
"""


def measure_cli(
    backend: str,
    n: int,
    rows: int,
    rounds: int,
    bytecode: str = "cached",
    against: str | None = None,
) -> dict[str, Any]:
    """Fresh processes: ``strata build --all --force`` against the same code by hand;
    with ``against`` (another checkout's ``src``), that code's command too, each round
    running the three in a rotated order."""
    import subprocess
    import sys

    import pyarrow as pa

    with scratch_dir("overhead-cli") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        (folder / "chain.py").write_text(PIPELINE.format(n=n))
        with lake.transaction("raw/events", type="SNAPSHOT") as txn:
            txn.write(pa.table({"k": list(range(rows)), "v": [1.0] * rows}))
        source = lake.storage.spark_uri(lake.files("raw/events")[0].path)
        env = user_env(
            bytecode == "cached",
            STRATA_HOME=str(home / ".strata"),
            STRATA_DATABASE_URL=lake.settings.database_url,
            STRATA_LAKE_URI=lake.settings.lake_uri,
            STRATA_PIPELINES=str(folder),
        )
        cli = [sys.executable, "-m", "strata.cli", "build", "--all", "--force", "--json"]

        def strata_run(path: str | None = None) -> float:
            side = env if path is None else {**env, "PYTHONPATH": path}
            t0 = time.monotonic()
            subprocess.run(cli, env=side, check=True, capture_output=True)
            return time.monotonic() - t0

        def hand_run(r: int) -> float:
            out = home / f"hand{r}"
            out.mkdir()
            argv = [
                sys.executable,
                "-c",
                HAND_SCRIPT,
                str(home / ".strata"),
                source,
                str(out),
                str(n),
            ]
            t0 = time.monotonic()
            subprocess.run(argv, env=env, check=True, capture_output=True)
            took = time.monotonic() - t0
            shutil.rmtree(out, ignore_errors=True)
            return took

        # One unmeasured run each: the bytecode cache is written, the disk cache warm.
        strata_run()
        hand_run(-1)
        runs: dict[str, Callable[[int], float]] = {
            "hand": hand_run,
            "strata": lambda r: strata_run(),
        }
        if against is not None:
            strata_run(against)
            runs["against"] = lambda r: strata_run(against)
        took: dict[str, list[float]] = {name: [] for name in runs}
        names = list(runs)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                took[name].append(runs[name](r))
    result = _result(backend, n, rows, took["hand"], took["strata"])
    if against is not None:
        result["against"] = _result(backend, n, rows, took["hand"], took["against"])
    return result


def _result(
    backend: str, n: int, rows: int, hand_s: list[float], strata_s: list[float]
) -> dict[str, Any]:
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
    p.add_argument("--cli", action="store_true", help="fresh processes, as from a shell")
    p.add_argument(
        "--bytecode",
        choices=["cached", "off"],
        default="cached",
        help="with --cli: Python's bytecode cache as on a user's machine, or off "
        "(PYTHONDONTWRITEBYTECODE=1: every command compiles Strata's modules again)",
    )
    p.add_argument(
        "--against",
        metavar="SRC",
        help="with --cli: also run another checkout's command (its src folder, as "
        "PYTHONPATH), in the same rounds",
    )
    args = p.parse_args()
    results = [
        measure_cli(b, args.transforms, args.rows, args.rounds, args.bytecode, args.against)
        if args.cli
        else measure(b, args.transforms, args.rows, args.rounds)
        for b in backends(args.backend)
    ]
    print_table(
        "build overhead per transform (s)" + (", from a shell" if args.cli else ", in process"),
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
        ]
        + [
            (
                f"{r['backend']}, against",
                r["transforms"],
                r["against"]["hand_s"]["p50"],
                r["against"]["strata_s"]["p50"],
                r["against"]["overhead_per_transform_s"]["p50"],
                r["against"]["overhead_per_transform_s"]["max"],
            )
            for r in results
            if "against" in r
        ],
    )
    write_json(
        "build_overhead_cli" if args.cli else "build_overhead", args.json, vars(args), results
    )


if __name__ == "__main__":
    main()
