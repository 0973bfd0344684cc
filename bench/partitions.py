"""Partitions: a first build of many, a late-data rebuild of one, status over many, reads.

Four figures, each side by side in one run:

- **first build**: ``metrics/daily`` over all ``--regions`` x ``--days`` partitions
  (their runs in one Spark job), against ``metrics/daily_whole`` (the same code, not
  partitioned): the first build of each, then ``--first-rounds`` forced rebuilds of
  both, alternating. With ``--apart``, also the first build of ``metrics/daily_apart``
  (``partition_local=False``: one Spark job per partition, as before). With
  ``--checks``, the same for ``metrics/daily_checked`` against
  ``metrics/daily_whole_checked`` (both with three output checks); with
  ``--input-checks``, for ``metrics/daily_gated`` against ``metrics/daily_whole_gated``
  (both with three checks on their input). Target ≤ 3.

- **late rebuild**: ``raw/events`` partitioned by ``(region, day)``, ``--regions`` x
  ``--days`` partitions of ``--rows`` rows. ``metrics/daily`` (partitioned the same way,
  built partition by partition) and ``metrics/daily_whole`` (the same code, not
  partitioned) are built once; then each of ``--rounds`` rounds appends late rows to one
  partition and times the partitioned build (one partition runs) against a build of
  the whole dataset (``daily_whole`` forced). Target ≤ 1/20.
- **status**: a partitioned output of ``--status-partitions`` partitions, each recorded
  as built from its input partition (the catalog rows a build writes, written directly:
  building 10,000 partitions one Spark run each would take an hour), one input partition
  late. ``BuildService.dataset_status`` in process, median of ``--status-rounds``.
  Target ≤ 200 ms.
- **read one partition**: ``Lake.read_arrow(partitions=…)`` and a Spark count of one
  partition of a dataset of ``--read-partitions`` partitions against one of 10. Target
  ratio ≈ 1.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from _common import backends, open_lake, parser, print_table, scratch_dir, write_json

PIPELINE = """
from pyspark.sql import functions as F  # noqa: N812

from strata import Check, Input, Output, transform_df
from strata import expectations as E  # noqa: N812


def totals(events):
    return events.groupBy("region", "day", "customer").agg(
        F.count("*").alias("n"), F.sum("amount").alias("amount")
    )


@transform_df(Output("metrics/daily", partition_by=["region", "day"]), events=Input("raw/events"))
def daily(events):
    return totals(events)


@transform_df(
    Output("metrics/daily_apart", partition_by=["region", "day"], partition_local=False),
    events=Input("raw/events"),
)
def daily_apart(events):
    return totals(events)


@transform_df(Output("metrics/daily_whole"), events=Input("raw/events"))
def daily_whole(events):
    return totals(events)


CHECKS = [
    Check(E.primary_key("region", "day", "customer"), "one row a customer a day"),
    Check(E.col("amount").gte(0), "no negative amounts"),
    Check(E.row_count().gt(0), "not empty"),
]


@transform_df(
    Output("metrics/daily_checked", partition_by=["region", "day"], checks=CHECKS),
    events=Input("raw/events"),
)
def daily_checked(events):
    return totals(events)


@transform_df(Output("metrics/daily_whole_checked", checks=CHECKS), events=Input("raw/events"))
def daily_whole_checked(events):
    return totals(events)


INPUT_CHECKS = [
    Check(E.not_null("customer"), "every event has a customer"),
    Check(E.col("amount").gte(0), "no negative amounts"),
    Check(E.row_count().gt(0), "not empty"),
]


@transform_df(
    Output("metrics/daily_gated", partition_by=["region", "day"]),
    events=Input("raw/events", checks=INPUT_CHECKS),
)
def daily_gated(events):
    return totals(events)


@transform_df(
    Output("metrics/daily_whole_gated"), events=Input("raw/events", checks=INPUT_CHECKS)
)
def daily_whole_gated(events):
    return totals(events)


@transform_df(Output("metrics/p", partition_by=["p"]), src=Input("raw/p"))
def copy(src):
    return src
"""

REGIONS = ("JP", "UK", "US", "DE", "BR", "IN")


def timed(action: Any) -> float:
    t0 = time.perf_counter()
    action()
    return time.perf_counter() - t0


def events(regions: int, days: int, rows: int, late: int = 0) -> Any:
    import pyarrow as pa

    cols: dict[str, list[Any]] = {"region": [], "day": [], "customer": [], "amount": []}
    for r in REGIONS[:regions]:
        for d in range(days):
            day = (date(2026, 1, 1) + timedelta(days=d)).isoformat()
            cols["region"] += [r] * rows
            cols["day"] += [day] * rows
            cols["customer"] += [f"c{(i + late) % 50}" for i in range(rows)]
            cols["amount"] += [i + late for i in range(rows)]
    return pa.table(cols)


def _built(report: Any) -> Any:
    if report.failed:
        raise SystemExit(f"the build failed: {[s.reason for s in report.steps if s.reason]}")
    return report


def first_build(lake: Any, service: Any, args: Any) -> dict[str, Any]:
    with lake.transaction("raw/events", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(events(args.regions, args.days, args.rows))
    build = lambda name, force=False: _built(service.build([name], force=force))  # noqa: E731
    whole_first = timed(lambda: build("metrics/daily_whole"))
    first = timed(lambda: build("metrics/daily"))
    apart = timed(lambda: build("metrics/daily_apart")) if args.apart else None
    print(
        f"first builds: whole {whole_first:.1f} s, partitions {first:.1f} s, one job "
        f"each {apart if apart is None else round(apart, 1)} s",
        flush=True,
    )
    together, whole = forced_rounds(build, "metrics/daily", "metrics/daily_whole", args)
    out = {
        "first_build_s": first,
        "first_whole_s": whole_first,
        "first_apart_s": apart,
        "forced_partitions_s": together,
        "forced_whole_s": whole,
        "first_ratio": first / whole_first,
        "forced_ratio": _ratio(together, whole),
        "checked_first_ratio": None,
        "checked_forced_ratio": None,
        "gated_first_ratio": None,
        "gated_forced_ratio": None,
    }
    if args.checks:
        out |= _checked_pair(build, "checked", args)
    if args.input_checks:
        out |= _checked_pair(build, "gated", args)
    return out


def _checked_pair(build: Any, kind: str, args: Any) -> dict[str, Any]:
    """The first build and forced rebuilds of ``metrics/daily_<kind>`` against
    ``metrics/daily_whole_<kind>``."""
    parts, whole = f"metrics/daily_{kind}", f"metrics/daily_whole_{kind}"
    first_whole = timed(lambda: build(whole))
    first = timed(lambda: build(parts))
    print(f"first builds, {kind}: whole {first_whole:.1f} s, partitions {first:.1f} s")
    pair = forced_rounds(build, parts, whole, args)
    return {
        f"{kind}_first_s": first,
        f"{kind}_first_whole_s": first_whole,
        f"{kind}_forced_partitions_s": pair[0],
        f"{kind}_forced_whole_s": pair[1],
        f"{kind}_first_ratio": first / first_whole,
        f"{kind}_forced_ratio": _ratio(*pair),
    }


def forced_rounds(build: Any, parts: str, whole: str, args: Any) -> tuple[list[float], ...]:
    """``--first-rounds`` forced rebuilds of ``parts`` and ``whole``, alternating."""
    together: list[float] = []
    whole_s: list[float] = []
    for r in range(args.first_rounds):
        pair = [(parts, together), (whole, whole_s)]
        for name, into in pair if r % 2 == 0 else reversed(pair):
            into.append(timed(lambda name=name: build(name, True)))
        print(f"forced round {r + 1}: {parts} {together[-1]:.2f} s, whole {whole_s[-1]:.2f} s")
    return together, whole_s


def _ratio(parts: list[float], whole: list[float]) -> float | None:
    return statistics.median(parts) / statistics.median(whole) if parts else None


def late_rebuild(lake: Any, service: Any, args: Any) -> dict[str, Any]:
    ours, whole = [], []
    for r in range(args.rounds):
        late = events(1, 1, args.rows, late=r + 1).slice(0, max(1, args.rows // 10))
        with lake.transaction("raw/events", "APPEND") as txn:
            txn.write(late)
        one = lambda: _built(service.build(["metrics/daily"]))  # noqa: E731
        everything = lambda: _built(service.build(["metrics/daily_whole"], force=True))  # noqa: E731
        for action in (one, everything) if r % 2 == 0 else (everything, one):
            seconds = timed(action)
            (ours if action is one else whole).append(seconds)
        print(f"round {r + 1}: one partition {ours[-1]:.2f} s, whole {whole[-1]:.2f} s")
    return {
        "partitions": args.regions * args.days,
        "one_partition_s": ours,
        "whole_s": whole,
        "late_ratio": statistics.median(ours) / statistics.median(whole),
    }


def status_figure(lake: Any, service: Any, args: Any) -> dict[str, Any]:
    import pyarrow as pa

    from strata.ids import new_id
    from strata.store.owners.partition_builds import PartitionBuild

    n = args.status_partitions
    keys = [f"k{i:05d}" for i in range(n)]
    table = pa.table({"p": keys, "v": list(range(n))})
    with lake.transaction("raw/p", "SNAPSHOT", partition_by=["p"]) as txn:
        txn.write(table)
    # As a build would: the version names the run that made it (else it counts as raw).
    run = new_id()
    with lake.transaction("metrics/p", "SNAPSHOT", partition_by=["p"], run_uuid=run) as txn:
        txn.write(table)
    item = service.pipelines.producer("metrics/p")
    out = txn.versions["metrics/p"].commit_id
    service.state.record_partitions(
        "metrics/p",
        [PartitionBuild(f"p={k}", out, run, item.fingerprint, {"raw/p": 1}) for k in keys],
    )
    with lake.transaction("raw/p", "APPEND") as txn:
        txn.write(pa.table({"p": [keys[7]], "v": [-1]}))
    found = service.dataset_status("metrics/p")
    stale = [p.key for p in found.partitions if p.stale]
    assert stale == [f"p={keys[7]}"], stale
    seconds = [
        timed(lambda: service.dataset_status("metrics/p")) for _ in range(args.status_rounds)
    ]
    return {"status_partitions": n, "status_ms": [s * 1000 for s in seconds]}


def read_figure(lake: Any, args: Any) -> dict[str, Any]:
    import pyarrow as pa

    from strata.lake.spark import get_spark

    spark = get_spark(lake.settings)
    sizes = {"small": 10, "large": args.read_partitions}
    for name, n in sizes.items():
        rows = 200
        table = pa.table(
            {"p": [f"k{i:05d}" for i in range(n) for _ in range(rows)], "v": list(range(n * rows))}
        )
        with lake.transaction(f"read/{name}", "SNAPSHOT", partition_by=["p"]) as txn:
            txn.write(table)
    arrow: dict[str, list[float]] = {k: [] for k in sizes}
    sparks: dict[str, list[float]] = {k: [] for k in sizes}
    for r in range(args.read_rounds):
        for name in sizes if r % 2 == 0 else reversed(sizes):
            ds, key = f"read/{name}", {"p": "k00003"}
            arrow[name].append(timed(lambda ds=ds, k=key: lake.read_arrow(ds, partitions=k)))
            count = lambda ds=ds, k=key: lake.read(ds, partitions=k, spark=spark).count()  # noqa: E731
            sparks[name].append(timed(count))
    med = {k: (statistics.median(arrow[k]), statistics.median(sparks[k])) for k in sizes}
    return {
        "read_partitions": args.read_partitions,
        "arrow_s": arrow,
        "spark_s": sparks,
        "arrow_ratio": med["large"][0] / med["small"][0],
        "spark_ratio": med["large"][1] / med["small"][1],
    }


def measure(backend: str, args: Any) -> dict[str, Any]:
    from strata.builds.service import BuildService
    from strata.lake.service import Lake
    from strata.settings import Settings

    with scratch_dir("partitions") as home, open_lake(backend, home) as opened:
        limit = max(opened.settings.partition_limit, args.status_partitions)
        lake = Lake(dataclasses.replace(opened.settings, partition_limit=limit), opened.engine)
        folder = Path(home) / "pipelines"
        folder.mkdir()
        (folder / "days.py").write_text(PIPELINE)
        settings = Settings(
            home=home, database_url=lake.settings.database_url, partition_limit=limit
        )
        service = BuildService(settings, [str(folder)], lake=lake)
        out: dict[str, Any] = {"backend": backend}
        out |= read_figure(lake, args)
        out |= status_figure(lake, service, args)
        out |= first_build(lake, service, args)
        out |= late_rebuild(lake, service, args)
    return out


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.set_defaults(backend="sqlite")
    p.add_argument("--regions", type=int, default=3, help="regions (at most 6)")
    p.add_argument("--days", type=int, default=365, help="days per region")
    p.add_argument("--rows", type=int, default=2000, help="rows per partition")
    p.add_argument("--rounds", type=int, default=3, help="late-data rounds")
    p.add_argument("--first-rounds", type=int, default=3, help="forced whole rebuilds")
    p.add_argument("--apart", action="store_true", help="also one Spark job per partition")
    p.add_argument("--checks", action="store_true", help="also the same with output checks")
    p.add_argument("--input-checks", action="store_true", help="also with input checks")
    p.add_argument("--status-partitions", type=int, default=10_000)
    p.add_argument("--status-rounds", type=int, default=7)
    p.add_argument("--read-partitions", type=int, default=1000)
    p.add_argument("--read-rounds", type=int, default=7)
    args = p.parse_args()
    results = [measure(b, args) for b in backends(args.backend)]
    rows = [
        (
            r["backend"],
            r["first_ratio"],
            r["forced_ratio"],
            r["checked_first_ratio"],
            r["checked_forced_ratio"],
            r["gated_first_ratio"],
            r["gated_forced_ratio"],
            statistics.median(r["one_partition_s"]),
            statistics.median(r["whole_s"]),
            r["late_ratio"],
            statistics.median(r["status_ms"]),
            r["arrow_ratio"],
            r["spark_ratio"],
        )
        for r in results
    ]
    print_table(
        f"partitions: {args.regions}x{args.days} first build and late rebuild, status of "
        f"{args.status_partitions:,}, read 1 of {args.read_partitions:,} vs 1 of 10 "
        "(targets: ≤ 3, ≤ 0.05, ≤ 200 ms, ≈ 1)",
        [
            "backend",
            "first / whole",
            "forced / whole",
            "checked first",
            "checked forced",
            "input checked first",
            "input checked forced",
            "one partition s",
            "whole s",
            "late ratio",
            "status ms",
            "arrow",
            "spark",
        ],
        rows,
    )
    write_json("partitions", args.json, vars(args), results)


if __name__ == "__main__":
    main()
