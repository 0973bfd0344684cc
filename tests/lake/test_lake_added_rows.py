"""The rows appended between two versions, as incremental builds read them: only those
versions' containers, how a dataset moved between two versions, and purged files
refused by name."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlalchemy as sa

from strata.errors import PurgedVersion
from strata.lake import registry
from strata.lake.service import Lake
from strata.store.engine import read_tx, write_tx
from strata.store.schema import dataset_files


def ids(*values: int) -> pa.Table:
    return pa.table({"id": pa.array(values, pa.int64())})


def commit(lake: Lake, kind: str, table: pa.Table) -> int:
    with lake.transaction("t", type=kind) as txn:
        txn.write(table)
    return txn.versions["t"].commit_id


def moved(lake: Lake, after: int, upto: int) -> registry.Moved:
    uuid = lake.version("t").dataset_uuid
    with read_tx(lake.engine) as conn:
        return registry.moves(conn, [(uuid, after, upto)])[(uuid, after, upto)]


def test_the_rows_added_are_those_of_the_versions_in_between(lake: Lake) -> None:
    for start in range(0, 50, 10):
        commit(lake, "APPEND", ids(*range(start, start + 10)))
    uuid = lake.version("t").dataset_uuid
    with read_tx(lake.engine) as conn:
        added = registry.added_files(conn, uuid, 3, 5)
        earlier = registry.added_files(conn, uuid, 0, 1)
    assert sum(f.rows for f in added) == 20
    assert {f.path for f in added}.isdisjoint(f.path for f in lake.files("t", version=3))
    assert sum(f.rows for f in earlier) == 10
    assert moved(lake, 3, 5) == registry.Moved(commits=2, rows=20, rewrite=None)
    uuid = lake.version("t").dataset_uuid
    with read_tx(lake.engine) as conn:
        assert registry.moves(conn, [(uuid, 5, 5)]) == {}  # nothing to ask about


def test_a_version_that_is_not_an_append_is_named(lake: Lake) -> None:
    commit(lake, "APPEND", ids(1, 2))
    commit(lake, "APPEND", ids(3))
    snapshot = commit(lake, "SNAPSHOT", ids(9))
    commit(lake, "APPEND", ids(10))
    assert moved(lake, 1, 2) == registry.Moved(commits=1, rows=1, rewrite=None)
    assert moved(lake, 1, 4) == registry.Moved(commits=3, rows=0, rewrite=(snapshot, "SNAPSHOT"))


def test_added_rows_of_purged_containers_are_refused(lake: Lake) -> None:
    commit(lake, "APPEND", ids(1))
    commit(lake, "APPEND", ids(2))
    uuid = lake.version("t").dataset_uuid
    with write_tx(lake.engine) as conn:  # as retention would mark them
        conn.execute(
            dataset_files.update()
            .where(dataset_files.c.dataset_uuid == uuid, dataset_files.c.added_commit_id == 2)
            .values(purged_at=sa.func.now())
        )
    with read_tx(lake.engine) as conn:
        assert sum(f.rows for f in registry.added_files(conn, uuid, 0, 1)) == 1
        with pytest.raises(PurgedVersion, match="the rows versions 2 to 2 added can no longer"):
            registry.added_files(conn, uuid, 1, 2)
        with pytest.raises(PurgedVersion, match="version 2 can no longer be read"):
            registry.version_files(conn, uuid, 2)


def test_a_range_holding_a_version_retention_purged_is_named(lake: Lake) -> None:
    """An incremental read of a range with a purged version runs whole: the move says
    which version went."""
    from strata.retention.policies import Policy
    from strata.retention.service import Retention

    commit(lake, "SNAPSHOT", ids(1))
    commit(lake, "APPEND", ids(2))
    commit(lake, "APPEND", ids(3))
    commit(lake, "SNAPSHOT", ids(4))
    policy = Policy("old", ("t",), keep_versions=1, grace_seconds=0)
    assert Retention(lake, [policy]).run().count("purged") == 3
    assert moved(lake, 1, 3) == registry.Moved(commits=2, rows=0, rewrite=(2, "PURGED"))
    assert moved(lake, 1, 4).rewrite == (4, "SNAPSHOT")  # a rewrite is named first
