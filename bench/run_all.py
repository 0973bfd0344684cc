"""Run every benchmark with its default sizes, write JSON to bench/.out/, print a summary.

    .venv/bin/python bench/run_all.py [--backend sqlite|postgresql|both] [--quick]

``--quick`` shrinks every size (a smoke run, not figures to quote).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import OUT_DIR, fmt, print_table

HERE = Path(__file__).resolve().parent

BENCHES: list[tuple[str, list[str], list[str]]] = [
    # (script, default extra args, --quick extra args)
    ("commit_latency", [], ["--commits", "50", "--warmup", "5"]),
    ("small_append_vs_delta", [], ["--rounds", "20", "--warmup", "2"]),
    ("open_version", [], ["--versions", "300", "--reps", "30", "--file-reps", "5"]),
    ("spark_write", [], ["--rows", "200000", "--rounds", "2", "--warmup", "0"]),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    p.add_argument("--only", nargs="*", default=None, help="run only these benchmarks")
    a = p.parse_args()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, extra, quick in BENCHES:
        if a.only and name not in a.only:
            continue
        cmd = [sys.executable, str(HERE / f"{name}.py"), "--backend", a.backend]
        cmd += (quick if a.quick else extra) + ["--json", str(OUT_DIR / f"{name}.json")]
        print(f"\n=== {' '.join(cmd)}   (load average {os.getloadavg()[0]:.2f})", flush=True)
        t0 = time.monotonic()
        subprocess.run(cmd, check=True)
        print(f"=== {name} took {time.monotonic() - t0:.0f} s", flush=True)
    summarise(a.only)


def summarise(only: list[str] | None) -> None:
    rows: list[list[object]] = []

    def load(name: str) -> list[dict[str, object]]:
        path = OUT_DIR / f"{name}.json"
        if (only and name not in only) or not path.exists():
            return []
        return list(json.loads(path.read_text(encoding="utf-8"))["results"])

    for r in load("commit_latency"):
        rows.append(
            [
                "commit p50 / p99 ms",
                r["backend"],
                f"{fmt(r['p50'])} / {fmt(r['p99'])}",
                "p50 < 5 ms",
                "met" if float(r["p50"]) < 5 else "NOT met",
            ]
        )  # type: ignore[arg-type]
    for r in load("small_append_vs_delta"):
        rows.append(
            [
                "1k-row append strata/delta",
                r["backend"],
                fmt(r["ratio_of_medians"]),
                "<= 1",
                "met" if float(r["ratio_of_medians"]) <= 1 else "NOT met",
            ]
        )  # type: ignore[arg-type]
    for r in load("open_version"):
        rows.append(
            ["version() vN/v1", r["backend"], fmt(r["ratio_version_vN_over_v1"]), "~ 1", ""]
        )
        rows.append(
            [
                "files() appendN/snapshot",
                r["backend"],
                fmt(r["ratio_files_appendN_over_snapshot"]),
                "~ 1",
                "",
            ]
        )
    for r in load("spark_write"):
        rows.append(
            [
                "spark write strata/plain",
                r["backend"],
                fmt(r["ratio_of_medians"]),
                "< 1.05",
                "met" if float(r["ratio_of_medians"]) < 1.05 else "NOT met",
            ]
        )  # type: ignore[arg-type]
    if rows:
        print_table("summary", ["measure", "backend", "figure", "target", "status"], rows)


if __name__ == "__main__":
    main()
