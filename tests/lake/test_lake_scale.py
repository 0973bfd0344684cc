"""Resolving any version costs the same: no replay of the transaction history."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import sqlalchemy as sa

from strata.lake.service import Lake

COMMITS = 300


@contextmanager
def count_statements(engine: sa.Engine) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        seen.append(statement)

    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


def test_first_and_latest_of_many_versions_resolve_alike(lake: Lake) -> None:
    ds = "scale/appends"
    for n in range(COMMITS):
        with lake.transaction(ds, "APPEND") as txn:
            txn.write(pa.table({"n": pa.array([n], pa.int64())}))
    # One UPDATE in the middle of history, so removals are part of the index too.
    first_file = lake.files(ds, version=1)[0].path
    with lake.transaction(ds, "UPDATE") as txn:
        txn.remove(first_file)
    last = COMMITS + 1

    counts = {}
    for version in (1, COMMITS // 2, COMMITS, last, None):
        with count_statements(lake.engine) as seen:
            files = lake.files(ds, version=version)
        counts[version] = len(seen)
        expected = {1: 1, COMMITS // 2: COMMITS // 2, COMMITS: COMMITS, last: COMMITS - 1}
        assert len(files) == expected[version or last]
    assert len(set(counts.values())) == 1, counts
    assert counts[1] <= 4, counts  # a handful of indexed queries, not one per commit

    with count_statements(lake.engine) as seen:
        v1 = lake.version(ds, version=1)
    with count_statements(lake.engine) as seen_last:
        vn = lake.version(ds, version=last)
    assert len(seen) == len(seen_last)
    assert (v1.row_count, vn.row_count) == (1, COMMITS - 1)

    assert lake.read_arrow(ds, version=1).column("n").to_pylist() == [0]
    assert sorted(lake.read_arrow(ds).column("n").to_pylist()) == list(range(1, COMMITS))
    assert [v.commit_id for v in lake.versions(ds)] == list(range(1, last + 1))
