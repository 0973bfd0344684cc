"""Incremental builds: the demo's hourly pipeline over many hourly appends.

Each hour appends about 10,000 clicks to ``raw/clicks`` (the demo's generator, ``--scale``
copies of each hour under distinct ids) and builds ``metrics/experiment_hourly``: four
``@incremental`` transforms. Three figures:

- **flat in history**: the median hourly build time over the last ``--window`` hours
  (hour ``--hours``) against the same over hours ``--early - window + 1 … --early``;
  target ≤ 1.3.
- **incremental against whole**: after the last hour, ``--rounds`` rounds each append one
  more hour and time both an incremental build and a ``--all --full`` build of the same
  pipeline (every transform over the whole history), alternating which goes first;
  target ≤ 0.25.
- **added rows read**: ``Lake.read_added`` of one APPEND version (``.count()`` in Spark)
  at version ``--early`` against version ``--hours``; target ratio ≈ 1.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from datetime import timedelta
from typing import Any

from _common import HERE, backends, open_lake, parser, print_table, scratch_dir, write_json

EXAMPLE = HERE.parent / "examples" / "experiments"


def hour_batch(clickstream: Any, hour: Any, seed: int, first: Any, scale: int) -> Any:
    """One hour of clicks, ``scale`` times over: each copy from its own seed, its event
    and session ids prefixed with the copy's number (so nothing is a duplicate)."""
    import pyarrow as pa

    parts = []
    for k in range(scale):
        b = clickstream.batch(hour, seed + k, first)
        for column in ("event_id", "session_id"):
            ids = pa.array([f"{k}:{x}" for x in b.column(column).to_pylist()], pa.string())
            b = b.set_column(b.schema.get_field_index(column), column, ids)
        parts.append(b)
    return pa.concat_tables(parts)


def timed(action: Any) -> float:
    t0 = time.perf_counter()
    action()
    return time.perf_counter() - t0


def measure(backend: str, args: Any) -> dict[str, Any]:
    sys.path.insert(0, str(EXAMPLE))
    import clickstream

    from strata.builds.service import BuildService
    from strata.cli.demo.example import FIRST_HOUR
    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("incremental") as home, open_lake(backend, home) as lake:
        folder = home / "pipelines"
        folder.mkdir()
        for name in ("hourly.py", "_experiments.py"):
            shutil.copy(EXAMPLE / "pipelines" / name, folder / name)
        settings = Settings(home=home, database_url=lake.settings.database_url)
        service = BuildService(settings, [str(folder)], lake=lake)
        with lake.transaction("raw/experiments", type="SNAPSHOT") as txn:
            txn.write(clickstream.experiments_table(FIRST_HOUR.date()))
        target = ["metrics/experiment_hourly"]

        def next_hour(h: int) -> int:
            hour = FIRST_HOUR + timedelta(hours=h)
            with lake.transaction("raw/clicks", type="APPEND") as txn:
                txn.write(hour_batch(clickstream, hour, args.seed, FIRST_HOUR, args.scale))
            return txn.versions["raw/clicks"].commit_id

        hourly: list[dict[str, Any]] = []
        for h in range(args.hours):
            version = next_hour(h)
            seconds = timed(lambda: _built(service.build(target)))
            rows = lake.version("raw/clicks").row_count
            hourly.append({"hour": h + 1, "raw_version": version, "seconds": seconds})
            print(f"hour {h + 1}: build {seconds:.2f} s ({rows:,} raw rows)", flush=True)

        ours, whole = [], []
        appended = args.hours
        for r in range(args.rounds):
            # The incremental build always has a new hour to read; a whole build reads
            # everything whatever came before it. The order alternates round by round.
            if r % 2:
                whole.append(timed(lambda: _built(service.build(everything=True, full=True))))
            next_hour(appended)
            appended += 1
            ours.append(timed(lambda: _built(service.build(target))))
            if not r % 2:
                whole.append(timed(lambda: _built(service.build(everything=True, full=True))))
            print(f"round {r + 1}: incremental {ours[-1]:.2f} s, whole {whole[-1]:.2f} s")

        spark = get_spark(settings)
        early, late = [], []
        for r in range(args.read_rounds):
            reads = [
                lambda: early.append(
                    timed(
                        lambda: lake.read_added(
                            "raw/clicks", args.early - 1, args.early, spark
                        ).count()
                    )
                ),
                lambda: late.append(
                    timed(
                        lambda: lake.read_added(
                            "raw/clicks", args.hours - 1, args.hours, spark
                        ).count()
                    )
                ),
            ]
            for read in reads if r % 2 == 0 else reversed(reads):
                read()

    def window(end: int) -> float:
        return statistics.median(x["seconds"] for x in hourly[end - args.window : end])

    at_early, at_end = window(args.early), window(args.hours)
    return {
        "backend": backend,
        "hours": args.hours,
        "scale": args.scale,
        "hourly": hourly,
        "early_median_s": at_early,
        "late_median_s": at_end,
        "flat_ratio": at_end / at_early,
        "incremental_s": ours,
        "whole_s": whole,
        "incremental_vs_whole": statistics.median(ours) / statistics.median(whole),
        "read_added_early_s": early,
        "read_added_late_s": late,
        "read_added_ratio": statistics.median(late) / statistics.median(early),
    }


def _built(report: Any) -> None:
    if report.failed:
        raise SystemExit(f"the build failed: {[s.reason for s in report.steps if s.reason]}")


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.set_defaults(backend="sqlite")
    p.add_argument("--hours", type=int, default=200, help="hourly appends and builds")
    p.add_argument("--early", type=int, default=10, help="the early hour compared with the last")
    p.add_argument("--window", type=int, default=3, help="hours in each median")
    p.add_argument("--scale", type=int, default=4, help="copies of the demo's hour (~2,500 each)")
    p.add_argument("--rounds", type=int, default=3, help="incremental vs whole rounds")
    p.add_argument("--read-rounds", type=int, default=7, help="added-rows read rounds")
    args = p.parse_args()
    results = [measure(b, args) for b in backends(args.backend)]
    rows = [
        (
            r["backend"],
            r["early_median_s"],
            r["late_median_s"],
            r["flat_ratio"],
            statistics.median(r["incremental_s"]),
            statistics.median(r["whole_s"]),
            r["incremental_vs_whole"],
            r["read_added_ratio"],
        )
        for r in results
    ]
    print_table(
        f"hourly pipeline, {args.hours} hours of ~{args.scale * 2500:,} clicks "
        "(targets: flat ≤ 1.3, incremental/whole ≤ 0.25, read ≈ 1)",
        [
            "backend",
            f"hour {args.early} s",
            f"hour {args.hours} s",
            "flat",
            "incremental s",
            "whole s",
            "inc/whole",
            "read v_late/v_early",
        ],
        rows,
    )
    write_json("incremental", args.json, vars(args), results)


if __name__ == "__main__":
    main()
