"""What the data fingerprint costs a large Spark write.

The DataFrame of ``spark_write.py`` (``--rows`` rows: ``id``, ``user`` string, ``score``
double, ``clicks`` int, ``ts`` timestamp; cached and counted first). Each round writes it
three ways, rotating which goes first:

- ``plain``: ``df.write.parquet(new path)``;
- ``observed``: the same write of ``df`` with its row hash observed
  (``strata.lake.rowhash.observed``): how a session without Strata's jar hashes;
- ``hashed``: the same write through the Parquet writer that sums the row hash as it
  writes (``strata.lake.spark_hashed``), as a local master with Strata's jar does (the
  observed write again where the jar is not made): the fingerprint's own cost, without
  the lake;
- ``strata``: ``lake.transaction(..., type=SNAPSHOT)`` + ``txn.write(df)`` + commit,
  which records the version's data fingerprint.

Outputs are deleted between rounds, outside the timers. The target is strata / plain
<= 1.2 (ratio of medians of wall time). Next to wall time, each write's CPU time (the
Spark JVM's plus this process's) is reported: on a shared machine it moves less than wall
time with other programs' load.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    backends,
    now_ms,
    ok,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    side_by_side,
    summary,
    write_json,
)
from spark_write import make_frame

TARGET_RATIO = 1.2
DATASET = "bench/fingerprinted"


class CpuClock:
    """CPU time (ms) of the Spark JVM (local mode: driver and executors) plus this process."""

    def __init__(self, spark: Any) -> None:
        self.stat = None
        try:
            pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
            self.stat = f"/proc/{pid}/stat"
            self.tick = os.sysconf("SC_CLK_TCK")
            self()
        except (OSError, AttributeError, ValueError):
            self.stat = None

    def __call__(self) -> float:
        if self.stat is None:
            return float("nan")
        with open(self.stat, encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        jvm = (int(fields[11]) + int(fields[12])) / self.tick
        return (jvm + time.process_time()) * 1000.0


def rotate(
    ops: dict[str, Callable[[int], float]], rounds: int, warmup: int, backend: str, cpu: CpuClock
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every op once per round, starting one later each round; keep rounds after
    ``warmup``. Returns each op's wall times (what the op measured) and CPU times."""
    names = list(ops)
    wall: dict[str, list[float]] = {n: [] for n in names}
    spent: dict[str, list[float]] = {n: [] for n in names}
    for i in range(warmup + rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        got: dict[str, tuple[float, float]] = {}
        for name in order:
            gc.collect()
            c0 = cpu()
            ms = ops[name](i)
            got[name] = (ms, cpu() - c0)
        print(
            f"  [{backend}] round {i + 1}{' (warm-up)' if i < warmup else ''}: "
            + ", ".join(f"{n} {got[n][0]:,.0f} ms (cpu {got[n][1]:,.0f})" for n in names),
            flush=True,
        )
        if i >= warmup:
            for n in names:
                wall[n].append(got[n][0])
                spent[n].append(got[n][1])
    return wall, spent


def run(backend: str, df: Any, rounds: int, warmup: int, cpu: CpuClock) -> dict[str, Any]:
    from strata.lake import spark_hashed
    from strata.lake.rowhash import observed, observed_hash

    with scratch_dir("fingerprint") as home, open_lake(backend, home) as lake:
        fingerprints: set[str | None] = set()
        hashes: set[Any] = set()

        def plain(i: int) -> float:
            target = home / "plain" / f"round-{i}"
            t0 = now_ms()
            df.write.parquet(target.as_uri())
            elapsed = now_ms() - t0
            shutil.rmtree(target, ignore_errors=True)
            return elapsed

        def observe(i: int) -> float:
            target = home / "observed" / f"round-{i}"
            t0 = now_ms()
            watched, obs = observed(df)
            watched.write.parquet(target.as_uri())
            hashes.add(observed_hash(obs))
            elapsed = now_ms() - t0
            shutil.rmtree(target, ignore_errors=True)
            return elapsed

        def hashed(i: int) -> float:
            if not spark_hashed.available(df):
                return observe(i)
            target = home / "hashed" / f"round-{i}"
            t0 = now_ms()
            hashes.add(spark_hashed.write(df, target.as_uri()))
            elapsed = now_ms() - t0
            shutil.rmtree(target, ignore_errors=True)
            return elapsed

        def strata(_i: int) -> float:
            t0 = now_ms()
            with lake.transaction(DATASET, type="SNAPSHOT") as txn:
                txn.write(df)
            elapsed = now_ms() - t0
            fingerprints.add(txn.versions[DATASET].data_fingerprint)
            for folder in {"/".join(f.path.split("/")[:2]) for f in lake.files(DATASET)}:
                shutil.rmtree(Path(lake.storage.local(folder)), ignore_errors=True)
            return elapsed

        ops = {"plain": plain, "observed": observe, "hashed": hashed, "strata": strata}
        kept, spent = rotate(ops, rounds, warmup, backend, cpu)
        version = lake.version(DATASET)
    assert len(fingerprints) == 1 and None not in fingerprints, fingerprints
    assert len(hashes) == 1, hashes
    return {
        "backend": backend,
        "rounds": rounds,
        "files_per_write": version.file_count,
        "fingerprint": fingerprints.pop(),
        "observed": summary(kept["observed"]),
        "hashed": summary(kept["hashed"]),
        "hashed_in_writer": spark_hashed.available(df),
        "cpu_ms": {n: summary(v) for n, v in spent.items()},
        "cpu_hashed_over_plain": summary(spent["hashed"])["p50"] / summary(spent["plain"])["p50"],
        "cpu_strata_over_plain": summary(spent["strata"])["p50"] / summary(spent["plain"])["p50"],
        "observed_over_plain": side_by_side(kept["observed"], kept["plain"], ("observed", "plain"))[
            "ratio_of_medians"
        ],
        "hashed_over_plain": side_by_side(kept["hashed"], kept["plain"], ("hashed", "plain"))[
            "ratio_of_medians"
        ],
        **side_by_side(kept["strata"], kept["plain"], ("strata", "plain")),
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--rows", type=int, default=5_000_000, help="rows (default 5,000,000)")
    p.add_argument("--partitions", type=int, default=4, help="DataFrame partitions (default 4)")
    p.add_argument("--rounds", type=int, default=6, help="timed rounds (default 6)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    a = p.parse_args()

    from strata.lake.spark import get_spark
    from strata.settings import Settings

    with scratch_dir("fingerprint-session") as tmp:
        spark = get_spark(Settings(home=tmp))
        t0 = now_ms()
        df: Any = make_frame(spark, a.rows, a.partitions)
        print(f"cached {a.rows:,} rows in {(now_ms() - t0) / 1000:.1f} s")
        cpu = CpuClock(spark)
        results = [run(b, df, a.rounds, a.warmup, cpu) for b in backends(a.backend)]
        df.unpersist()
        spark.stop()
    print_table(
        f"Spark write of {a.rows:,} cached rows with and without its data fingerprint, "
        f"{a.rounds} rounds rotating (ms)",
        [
            "backend",
            "files",
            "plain p50",
            "observed p50",
            "hashed p50",
            "strata p50",
            "observed/plain",
            "hashed/plain",
            "strata/plain",
            "paired ratio p50",
            "cpu hashed/plain",
            "cpu strata/plain",
            f"ratio <= {TARGET_RATIO}",
        ],
        [
            [
                r["backend"],
                r["files_per_write"],
                r["plain"]["p50"],
                r["observed"]["p50"],
                r["hashed"]["p50"],
                r["strata"]["p50"],
                r["observed_over_plain"],
                r["hashed_over_plain"],
                r["ratio_of_medians"],
                r["median_paired_ratio"],
                r["cpu_hashed_over_plain"],
                r["cpu_strata_over_plain"],
                ok(float(r["ratio_of_medians"]) <= TARGET_RATIO),
            ]
            for r in results
        ],
    )
    write_json("data_fingerprint", a.json, vars(a), results)


if __name__ == "__main__":
    main()
