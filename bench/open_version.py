"""Opening an old version against a new one: no history is replayed.

Builds a dataset with ``--versions`` APPEND commits of one small container each
(through the real transaction API, timed and reported), and a second dataset
whose single SNAPSHOT version holds the same number of containers. Then, with
the calls interleaved round-robin:

* metadata resolve, ``lake.version(name, version=N)``: version N vs version 1;
* file list, ``lake.files(name, version=N)``: version N of the APPEND dataset
  (N files, built from N transactions) vs version 1 of the SNAPSHOT dataset
  (N files, one transaction). If resolving replayed the delta log, the first
  would cost N times the second; a ratio near 1 shows it does not.
"""

from __future__ import annotations

import gc

from _common import (
    backends,
    now_ms,
    open_lake,
    parser,
    print_table,
    scratch_dir,
    summary,
    write_json,
)

APPENDS = "bench/appended"
SNAPSHOT = "bench/snapshot"


def build(lake: object, versions: int, progress: bool) -> dict[str, object]:
    import pyarrow as pa

    table = pa.table({"id": pa.array(range(10), pa.int64()), "v": pa.array([1.5] * 10)})
    commit_ms: list[float] = []
    t_start = now_ms()
    for i in range(versions):
        t0 = now_ms()
        with lake.transaction(APPENDS, type="APPEND") as txn:  # type: ignore[attr-defined]
            txn.write(table)
        commit_ms.append(now_ms() - t0)
        if progress and (i + 1) % 1000 == 0:
            print(f"  {i + 1} appends, {(now_ms() - t_start) / 1000:.1f} s", flush=True)
    append_total_s = (now_ms() - t_start) / 1000
    t0 = now_ms()
    with lake.transaction(SNAPSHOT, type="SNAPSHOT") as txn:  # type: ignore[attr-defined]
        for _ in range(versions):
            txn.write(table)
        t_commit = now_ms()
    snapshot_commit_s = (now_ms() - t_commit) / 1000
    snapshot_total_s = (now_ms() - t0) / 1000
    tenth = max(1, versions // 10)
    return {
        "appends": versions,
        "append_total_s": append_total_s,
        "append_per_txn_ms": summary(commit_ms),
        "append_p50_first_10pct_ms": summary(commit_ms[:tenth])["p50"],
        "append_p50_last_10pct_ms": summary(commit_ms[-tenth:])["p50"],
        "snapshot_total_s": snapshot_total_s,
        "snapshot_commit_s": snapshot_commit_s,
    }


def measure(lake: object, versions: int, reps: int, file_reps: int) -> dict[str, dict[str, float]]:
    mid = max(1, versions // 2)
    meta_ops = {
        "version v1": lambda: lake.version(APPENDS, version=1),  # type: ignore[attr-defined]
        f"version v{mid}": lambda: lake.version(APPENDS, version=mid),  # type: ignore[attr-defined]
        f"version v{versions}": lambda: lake.version(APPENDS, version=versions),  # type: ignore[attr-defined]
        "version latest": lambda: lake.version(APPENDS),  # type: ignore[attr-defined]
    }
    file_ops = {
        "files append v1 (1 file)": lambda: lake.files(APPENDS, version=1),  # type: ignore[attr-defined]
        f"files append v{versions} ({versions} files)": lambda: lake.files(  # type: ignore[attr-defined]
            APPENDS, version=versions
        ),
        f"files snapshot v1 ({versions} files)": lambda: lake.files(SNAPSHOT, version=1),  # type: ignore[attr-defined]
    }
    assert len(lake.files(APPENDS, version=versions)) == versions  # type: ignore[attr-defined]
    assert len(lake.files(SNAPSHOT, version=1)) == versions  # type: ignore[attr-defined]
    out: dict[str, dict[str, float]] = {}
    for ops, n in ((meta_ops, reps), (file_ops, file_reps)):
        times: dict[str, list[float]] = {k: [] for k in ops}
        names = list(ops)
        for op in ops.values():  # warm caches and statement compilation
            op()
        for i in range(n):
            gc.collect()
            shift = i % len(names)  # rotate the order every round
            for name in names[shift:] + names[:shift]:
                t0 = now_ms()
                ops[name]()
                times[name].append(now_ms() - t0)
        out.update({k: summary(v) for k, v in times.items()})
    return out


def run(backend: str, versions: int, reps: int, file_reps: int) -> dict[str, object]:
    with scratch_dir("open") as home, open_lake(backend, home) as lake:
        print(f"[{backend}] building {versions} APPEND versions and one {versions}-file SNAPSHOT")
        built = build(lake, versions, progress=True)
        timings = measure(lake, versions, reps, file_reps)
    p50 = {k: v["p50"] for k, v in timings.items()}
    return {
        "backend": backend,
        "build": built,
        "timings_ms": timings,
        "ratio_version_vN_over_v1": p50[f"version v{versions}"] / p50["version v1"],
        "ratio_files_appendN_over_snapshot": p50[f"files append v{versions} ({versions} files)"]
        / p50[f"files snapshot v1 ({versions} files)"],
    }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--versions", type=int, default=10_000, help="APPEND commits (default 10000)")
    p.add_argument("--reps", type=int, default=300, help="metadata resolves per op (default 300)")
    p.add_argument("--file-reps", type=int, default=40, help="file listings per op (default 40)")
    a = p.parse_args()
    results = [run(b, a.versions, a.reps, a.file_reps) for b in backends(a.backend)]
    for r in results:
        b = r["build"]
        print_table(
            f"[{r['backend']}] build",
            ["what", "value"],
            [
                [f"{a.versions} APPEND transactions, total s", b["append_total_s"]],  # type: ignore[index]
                ["per APPEND transaction p50 ms", b["append_per_txn_ms"]["p50"]],  # type: ignore[index]
                ["  p50 first 10% ms", b["append_p50_first_10pct_ms"]],  # type: ignore[index]
                ["  p50 last 10% ms", b["append_p50_last_10pct_ms"]],  # type: ignore[index]
                [f"SNAPSHOT of {a.versions} files, total s", b["snapshot_total_s"]],  # type: ignore[index]
                ["  of which commit() s", b["snapshot_commit_s"]],  # type: ignore[index]
            ],
        )
        t = r["timings_ms"]
        print_table(
            f"[{r['backend']}] open a version (ms, interleaved)",
            ["call", "p50", "p90", "p99"],
            [[k, v["p50"], v["p90"], v["p99"]] for k, v in t.items()],  # type: ignore[attr-defined]
        )
        print(
            f"  ratio version v{a.versions}/v1 (p50): {r['ratio_version_vN_over_v1']:.3f}\n"
            f"  ratio files append v{a.versions} / snapshot v1, same {a.versions} files (p50): "
            f"{r['ratio_files_appendN_over_snapshot']:.3f}"
        )
    write_json("open_version", a.json, vars(a), results)


if __name__ == "__main__":
    main()
