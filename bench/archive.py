"""The archive tier: the time of an archive pass (copy, verify, record, delete), and
reads of archived versions against the same versions in the lake.

Two identical datasets each get ``--versions`` SNAPSHOTs of ``--rows`` rows in
``--files`` containers each (through the real transaction API). An archive policy
(``older_than = "0s"``, a second local folder as its root) governs the first only: one
pass moves every old version's files. Then, interleaved round by round, the same reads
of an old version of each: whole (pyarrow), a preview (the first 100 rows), and the
catalog's file list. Both roots are on this machine's disk, so the ratios show what the
archive's own machinery costs a read, not a slower medium's.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from _common import (
    backends,
    interleaved_ops,
    now_ms,
    open_lake,
    parser,
    print_side_by_side,
    print_table,
    scratch_dir,
    write_json,
)

ARCHIVED = "raw/archived"
KEPT = "keep/untouched"


def build(lake: Any, dataset: str, versions: int, rows: int, files: int) -> None:
    import pyarrow as pa

    share = rows // files
    table = pa.table({"id": pa.array(range(share), pa.int64()), "v": pa.array([0.5] * share)})
    for _ in range(versions):
        with lake.transaction(dataset, type="SNAPSHOT") as txn:
            for _ in range(files):
                txn.write(table)


def reads(lake: Any, version: int, rounds: int) -> dict[str, Any]:
    ops = {
        "read a version whole (pyarrow)": lambda ds: lake.read_arrow(ds, version=version),
        "preview, 100 rows": lambda ds: lake.head(ds, 100, version),
        "files of a version": lambda ds: lake.files(ds, version=version),
    }
    return interleaved_ops(ops, (ARCHIVED, KEPT), ("archived", "lake"), rounds)


def run(backend: str, versions: int, rows: int, files: int, rounds: int) -> dict[str, Any]:
    from strata.lake.service import Lake
    from strata.retention.archive import Archive
    from strata.retention.archive_policies import ArchivePolicy

    with scratch_dir("archive") as home, open_lake(backend, home) as opened:
        lake = Lake(dataclasses.replace(opened.settings, gc_grace_seconds=0), opened.engine)
        for ds in (ARCHIVED, KEPT):
            build(lake, ds, versions, rows, files)
        policy = ArchivePolicy("cold", ("raw/*",), 0.0, (Path(home) / "cold").as_uri())
        t0 = now_ms()
        report = Archive(lake, [policy]).run()
        pass_s = (now_ms() - t0) / 1000
        assert lake.files(ARCHIVED, version=1)[0].archive is not None
        return {
            "backend": backend,
            "versions": versions,
            "pass_s": pass_s,
            "files_moved": report.files,
            "mb_moved": report.bytes / 1e6,
            "reads_ms": reads(lake, versions // 2, rounds),
        }


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--versions", type=int, default=200, help="SNAPSHOTs of each dataset")
    p.add_argument("--rows", type=int, default=200_000, help="rows a version holds")
    p.add_argument("--files", type=int, default=4, help="containers a version holds")
    p.add_argument("--rounds", type=int, default=30, help="rounds of each read")
    a = p.parse_args()
    results = [run(b, a.versions, a.rows, a.files, a.rounds) for b in backends(a.backend)]
    for r in results:
        print_table(
            f"[{r['backend']}] an archive pass over {r['versions'] - 1:,} old versions",
            ["what", "value"],
            [
                ["archive pass, s", r["pass_s"]],
                ["files moved", r["files_moved"]],
                ["MB moved", r["mb_moved"]],
                ["files a second", r["files_moved"] / r["pass_s"]],
                ["MB a second", r["mb_moved"] / r["pass_s"]],
            ],
        )
        print_side_by_side(
            f"[{r['backend']}] reads of an old version, archived / lake (ms, interleaved)",
            ("archived", "lake"),
            r["reads_ms"],
        )
    write_json("archive", a.json, vars(a), results)


if __name__ == "__main__":
    main()
