"""Spark in and out of the lake: Spark writes, Spark and Arrow reads agree."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from strata.errors import SchemaMismatch
from strata.lake.service import Lake

pytestmark = pytest.mark.spark


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(table.column(n).to_pylist() for n in table.schema.names), strict=True))


def test_spark_and_arrow_reads_agree(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    ds = "spark/events"
    ts = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(
            pa.table(
                {
                    "id": pa.array([1, 2], pa.int64()),
                    "name": ["a", None],
                    "at": pa.array([ts, ts], pa.timestamp("us", tz="UTC")),
                }
            )
        )
    frame = spark.createDataFrame(
        [(3, "c", ts), (4, "d", ts)], "id long, name string, at timestamp"
    ).repartition(2)
    with lake.transaction(ds, "APPEND") as txn:
        entries = txn.write(frame)
    assert len(entries) >= 1 and sum(e.rows for e in entries) == 2
    assert all(e.path.endswith(".parquet") for e in entries)
    v2 = txn.versions[ds]
    assert v2.row_count == 4

    for version in (1, 2):
        arrow = lake.read_arrow(ds, version=version)
        sdf = lake.read(ds, version=version, spark=spark)
        assert sorted(sdf.columns) == sorted(arrow.schema.names)
        spark_rows = sorted(tuple(r[n] for n in arrow.schema.names) for r in sdf.collect())
        arrow_rows = _rows(arrow)
        assert len(spark_rows) == len(arrow_rows) == (2 if version == 1 else 4)
        for s_row, a_row in zip(spark_rows, arrow_rows, strict=True):
            assert s_row[:2] == a_row[:2]
            # Same instant, whatever zone each reader attaches.
            assert s_row[2].replace(tzinfo=UTC) == a_row[2]

    # Spark is held to the dataset schema like any writer, and its refused output is deleted.
    txn = lake.transaction(ds, "APPEND")
    bad = spark.createDataFrame([("x", "y", ts)], "id string, name string, at timestamp")
    with pytest.raises(SchemaMismatch, match="id: string"):
        txn.write(bad)
    folder = Path(lake.storage.local(f"{txn._parts[ds].dataset_uuid}/{txn.uuid}"))
    assert folder.is_dir() and list(folder.iterdir()) == []
    txn.abort()
    assert [v.commit_id for v in lake.versions(ds)] == [1, 2]


def test_spark_reads_an_empty_version(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    ds = "spark/emptied"
    with lake.transaction(ds, "APPEND") as txn:
        txn.write(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    with lake.transaction(ds, "DELETE") as txn:
        txn.remove(*(f.path for f in lake.files(ds)))
    sdf = lake.read(ds, spark=spark)
    assert sdf.count() == 0
    assert sdf.columns == ["id", "name"]
    assert lake.read(ds, version=1, spark=spark).collect()[0]["name"] == "a"


def test_a_frame_over_many_files_lists_them_in_a_few_tasks(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    # Spark lists more than 32 paths in a job of its own; one task a file cost a
    # partitioned dataset's 1,095 files about 3 s before any of its rows were read.
    ds = "spark/many_files"
    keys = [f"k{i:02d}" for i in range(40)]
    with lake.transaction(ds, "SNAPSHOT", partition_by=["p"]) as txn:
        txn.write(pa.table({"p": keys, "v": list(range(40))}))
    assert len(lake.files(ds)) == 40
    context = spark.sparkContext
    context.setJobGroup("many-files", "open a frame over 40 files")
    try:
        frame = lake.read(ds, spark=spark)
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    tracker = context.statusTracker()
    jobs = tracker.getJobIdsForGroup("many-files")
    assert jobs, "Spark listed the 40 files without a job: the setting is no longer needed"
    tasks = [
        tracker.getStageInfo(stage).numTasks
        for job in jobs
        for stage in tracker.getJobInfo(job).stageIds
    ]
    assert tasks and max(tasks) <= 8, tasks
    assert sorted(r["v"] for r in frame.collect()) == list(range(40))
