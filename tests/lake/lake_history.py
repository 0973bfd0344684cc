"""Checks over the whole history of an append-only dataset written by lake_worker.py."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from strata.lake.service import Lake
from strata.settings import Settings

Row = tuple[int, int, int]  # (writer, seq, i)


def writer_job(
    settings: Settings, dataset: str, writer: int, log: Path, **extra: Any
) -> dict[str, Any]:
    return {
        "home": str(settings.home),
        "database_url": settings.database_url,
        "lake_uri": settings.lake_uri,
        "dataset": dataset,
        "writer": writer,
        "log": str(log),
        "count": 0,
        **extra,
    }


@dataclass
class WriterLog:
    """What a writer said it was about to commit, and what it saw committed."""

    committing: dict[int, int] = field(default_factory=dict)  # seq -> rows
    done: dict[int, int] = field(default_factory=dict)  # seq -> commit id


def read_log(path: Path) -> WriterLog:
    log = WriterLog()
    if not path.exists():
        return log
    for line in path.read_text().splitlines():
        kind, seq, value = line.split()
        if kind == "commit":
            log.committing[int(seq)] = int(value)
        else:
            log.done[int(seq)] = int(value)
    return log


@dataclass
class History:
    versions: int
    rows: set[Row]
    # (writer, seq) -> the commit id whose version first holds that batch
    batches: dict[tuple[int, int], int]
    live_paths: set[str]
    all_paths: set[str]


def _rows(table: Any) -> list[Row]:
    return list(
        zip(
            table.column("writer").to_pylist(),
            table.column("seq").to_pylist(),
            table.column("i").to_pylist(),
            strict=True,
        )
    )


def verify_history(lake: Lake, dataset: str, read_back: int = 3) -> History:
    """Every version of an append-only dataset, checked against its files and its parent.

    Version N must hold exactly the rows of version N-1 plus one whole batch
    (writer, seq, 0..rows-1) that no other version added; every container a
    version lists must exist with the row count the catalog records. A few
    versions (always the latest) are also read through ``read_arrow``.
    """
    versions = lake.versions(dataset)
    assert [v.commit_id for v in versions] == list(range(1, len(versions) + 1))
    cache: dict[str, list[Row]] = {}
    previous: set[str] = set()
    rows: set[Row] = set()
    batches: dict[tuple[int, int], int] = {}
    all_paths: set[str] = set()
    expected_at: dict[int, set[Row]] = {}
    sample = {versions[-1].commit_id} if versions else set()
    sample |= set(random.sample([v.commit_id for v in versions], min(read_back, len(versions))))
    for v in versions:
        assert v.type == "APPEND"
        entries = lake.files(dataset, version=v.commit_id)
        paths = {e.path for e in entries}
        assert len(paths) == len(entries), f"version {v.commit_id} lists a container twice"
        assert previous <= paths, f"version {v.commit_id} lost containers of its parent"
        added = paths - previous
        assert added, f"version {v.commit_id} adds no container"
        for e in entries:
            if e.path not in cache:
                local = lake.storage.local(e.path)
                assert Path(local).is_file(), f"version {v.commit_id} lists missing {e.path}"
                table = pq.read_table(local)
                assert table.num_rows == e.rows
                cache[e.path] = _rows(table)
        assert v.file_count == len(entries)
        assert v.row_count == sum(e.rows for e in entries)
        new_rows = [r for p in sorted(added) for r in cache[p]]
        keys = {(w, s) for w, s, _ in new_rows}
        assert len(keys) == 1, f"version {v.commit_id} adds batches {keys}, not exactly one"
        key = keys.pop()
        assert key not in batches, f"batch {key} committed twice ({batches[key]}, {v.commit_id})"
        assert sorted(i for _, _, i in new_rows) == list(range(len(new_rows)))
        batches[key] = v.commit_id
        assert not rows & set(new_rows)
        rows |= set(new_rows)
        all_paths |= paths
        if v.commit_id in sample:
            expected_at[v.commit_id] = set(rows)
        previous = paths
    for commit_id, expected in expected_at.items():
        table = lake.read_arrow(dataset, version=commit_id)
        got = _rows(table)
        assert len(got) == len(expected) and set(got) == expected, f"version {commit_id}"
    return History(len(versions), rows, batches, previous, all_paths)
