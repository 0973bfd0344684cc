"""Data fingerprints: the same rows give the same fingerprint whatever the files, the
partitioning, the row or column order; other rows give another."""

from __future__ import annotations

import pyarrow as pa
import pytest

from strata.lake.rowhash import dataframe_row_hash, fingerprint
from strata.lake.service import Lake

ROWS = {"id": [1, 2, 3, 4, 5, 6], "name": ["a", "b", None, "d", "e", "f"]}


def _commit(lake: Lake, name: str, kind: str, *tables: pa.Table) -> str | None:
    with lake.transaction(name, type=kind) as txn:
        for t in tables:
            txn.write(t)
    return txn.versions[name].data_fingerprint


def test_arrow_fingerprint_ignores_order_and_files_and_carries_appends(lake: Lake) -> None:
    whole = pa.table(ROWS)
    one = _commit(lake, "t/one", "SNAPSHOT", whole)
    assert one is not None and len(one) == 64
    shuffled = whole.take([5, 3, 1, 0, 2, 4])
    assert _commit(lake, "t/two_files", "SNAPSHOT", shuffled.slice(0, 2), shuffled.slice(2)) == one
    _commit(lake, "t/appended", "APPEND", whole.slice(3))
    assert _commit(lake, "t/appended", "APPEND", whole.slice(0, 3)) == one
    assert _commit(lake, "t/columns", "SNAPSHOT", whole.select(["name", "id"])) == one
    changed = pa.table({"id": [1, 2, 3, 4, 5, 7], "name": ROWS["name"]})
    assert _commit(lake, "t/changed", "SNAPSHOT", changed) != one
    null_a = pa.table({"a": pa.array([None], pa.int64()), "b": pa.array([1], pa.int64())})
    null_b = pa.table({"a": pa.array([1], pa.int64()), "b": pa.array([None], pa.int64())})
    assert _commit(lake, "t/null_a", "SNAPSHOT", null_a) != _commit(
        lake, "t/null_b", "SNAPSHOT", null_b
    )
    assert lake.versions("t/appended")[-1].data_fingerprint == one
    # A second SNAPSHOT of the same rows replaces every file and keeps the fingerprint.
    assert _commit(lake, "t/one", "SNAPSHOT", shuffled) == one


def test_removing_files_leaves_the_fingerprint_unknown(lake: Lake) -> None:
    _commit(lake, "t/upd", "APPEND", pa.table(ROWS))
    path = lake.files("t/upd")[0].path
    with lake.transaction("t/upd", type="UPDATE") as txn:
        txn.write(pa.table({"id": [9], "name": ["z"]}))
        txn.remove(path)
    assert txn.versions["t/upd"].data_fingerprint is None
    # An empty snapshot has a fingerprint of its own.
    empty = _commit(lake, "t/empty", "SNAPSHOT", pa.table({"id": pa.array([], pa.int64())}))
    assert empty is not None


@pytest.mark.spark
def test_spark_fingerprint_ignores_partitioning_and_matches_a_rerun(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    rows = list(zip(ROWS["id"], ROWS["name"], strict=True))
    df = spark.createDataFrame(rows, "id long, name string")
    one = _commit(lake, "s/one", "SNAPSHOT", df.repartition(1))
    four = _commit(lake, "s/four", "SNAPSHOT", df.repartition(4).orderBy("id", ascending=False))
    assert one is not None and one == four
    assert _commit(lake, "s/cols", "SNAPSHOT", df.select("name", "id")) == one
    other = _commit(lake, "s/other", "SNAPSHOT", df.filter("id < 6"))
    assert other != one
    null_a = spark.createDataFrame([(None, 1)], "a long, b long")
    null_b = spark.createDataFrame([(1, None)], "a long, b long")
    assert _commit(lake, "s/null_a", "SNAPSHOT", null_a) != _commit(
        lake, "s/null_b", "SNAPSHOT", null_b
    )
    # A DataFrame hashed without writing gives what the committed version recorded.
    version = lake.version("s/one")
    assert fingerprint(version.schema_fields, dataframe_row_hash(df)) == one
