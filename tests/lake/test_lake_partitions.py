"""Partitioned datasets: containers laid out and indexed by key, SNAPSHOTs of some
partitions (as Delta's replaceWhere), what each version did to which partition, reads
of some partitions, and every refusal leaving the dataset as it was."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from strata.errors import CommitConflict, InvalidArgument
from strata.lake.service import Lake, connect
from strata.settings import Settings

DS = "metrics/daily"


def _table(rows: list[tuple[str, str, int]]) -> pa.Table:
    return pa.table(
        {
            "region": [r[0] for r in rows],
            "day": pa.array([date.fromisoformat(r[1]) for r in rows], pa.date32()),
            "n": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def _rows(lake: Lake, **kw: Any) -> list[tuple[str, str, int]]:
    table = lake.read_arrow(DS, **kw)
    return sorted((r["region"], r["day"].isoformat(), r["n"]) for r in table.to_pylist())


FIRST = [("JP", "2026-11-01", 1), ("UK", "2026-11-01", 2), ("JP", "2026-11-02", 3)]


def _seed(lake: Lake) -> None:
    with lake.transaction(DS, "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(_table(FIRST))


def test_containers_are_laid_out_and_indexed_by_key(lake: Lake) -> None:
    _seed(lake)
    v1 = lake.version(DS)
    assert v1.to_dict()["partitions"] == {
        "added": [
            {"region": "JP", "day": "2026-11-01"},
            {"region": "JP", "day": "2026-11-02"},
            {"region": "UK", "day": "2026-11-01"},
        ],
        "appended": [],
        "replaced": [],
        "removed": [],
    }
    files = lake.files(DS)
    assert len(files) == 3
    for f in files:
        assert f.partition is not None
        # The folders say the key; the file keeps the column itself.
        assert all(f"_{part}" in f.path for part in f.partition.split("/"))
    assert lake.partitions(DS) == {
        "region=JP/day=2026-11-01": 1,
        "region=JP/day=2026-11-02": 1,
        "region=UK/day=2026-11-01": 1,
    }
    jp = lake.files(DS, partitions={"region": "JP"})
    assert sorted(f.partition for f in jp) == [
        "region=JP/day=2026-11-01",
        "region=JP/day=2026-11-02",
    ]
    assert _rows(lake, partitions={"region": "JP"}) == [FIRST[0], FIRST[2]]
    one = lake.files(DS, partitions={"region": "UK", "day": date(2026, 11, 1)})
    assert [f.partition for f in one] == ["region=UK/day=2026-11-01"]
    assert lake.files(DS, partitions={"region": "FR"}) == []


def test_a_snapshot_of_some_partitions_keeps_the_rest(lake: Lake) -> None:
    _seed(lake)
    uk_before = lake.files(DS, partitions={"region": "UK"})
    with lake.transaction(DS, "SNAPSHOT", partitions=[{"region": "JP"}]) as txn:
        txn.write(_table([("JP", "2026-11-01", 10)]))
    v2 = txn.versions[DS]
    assert v2.partitions == {
        "added": [],
        "appended": [],
        "replaced": ["region=JP/day=2026-11-01"],
        "removed": ["region=JP/day=2026-11-02"],
    }
    assert (v2.row_count, v2.file_count) == (2, 2)
    # UK's container is the same file: not rewritten.
    assert lake.files(DS, partitions={"region": "UK"}) == uk_before
    assert _rows(lake) == [("JP", "2026-11-01", 10), ("UK", "2026-11-01", 2)]
    assert _rows(lake, version=1) == sorted(FIRST)  # version 1 reads as it was
    assert lake.partitions(DS) == {"region=JP/day=2026-11-01": 2, "region=UK/day=2026-11-01": 1}

    with lake.transaction(DS, "APPEND") as txn:
        txn.write(_table([("UK", "2026-11-01", 5), ("FR", "2026-11-01", 6)]))
    assert txn.versions[DS].partitions == {
        "added": ["region=FR/day=2026-11-01"],
        "appended": ["region=UK/day=2026-11-01"],
        "replaced": [],
        "removed": [],
    }
    assert lake.partitions(DS)["region=UK/day=2026-11-01"] == 3
    assert lake.partitions(DS)["region=JP/day=2026-11-01"] == 2  # untouched by version 3
    _each_key_s_last_change_counts_removals(lake)


def _each_key_s_last_change_counts_removals(lake: Lake) -> None:
    """What status compares: each key's last change up to a version, a removal included
    (JP's second day, removed by version 2, held no file after it)."""
    from strata.lake import partition_index

    jp1, jp2, uk, fr = (
        "region=JP/day=2026-11-01",
        "region=JP/day=2026-11-02",
        "region=UK/day=2026-11-01",
        "region=FR/day=2026-11-01",
    )
    uuid = lake.version(DS).dataset_uuid
    with lake.engine.connect() as conn:
        assert partition_index.changed_at(conn, uuid, 3, removed_too=True) == {
            jp1: 2,
            jp2: 2,
            uk: 3,
            fr: 3,
        }
        assert partition_index.changed_at(conn, uuid, 3) == {jp1: 2, uk: 3, fr: 3}
        assert partition_index.changed_at(conn, uuid, 1, removed_too=True) == {
            jp1: 1,
            jp2: 1,
            uk: 1,
        }
        assert partition_index.changed_at(conn, uuid, 2) == {jp1: 2, uk: 1}


def test_a_snapshot_of_some_partitions_keeps_the_schema_of_those_it_keeps(lake: Lake) -> None:
    """Files kept from the parent must read as the new version's schema: a SNAPSHOT of
    some partitions with other types is refused and commits nothing, unless it replaces
    every partition the dataset holds."""
    from strata.errors import SchemaMismatch

    _seed(lake)
    as_text = pa.table({"region": ["JP"], "day": ["2026-11-01"], "n": ["ten"]})
    with (
        pytest.raises(SchemaMismatch) as refused,
        lake.transaction(DS, "SNAPSHOT", partitions=[{"region": "JP"}]) as txn,
    ):
        txn.write(as_text)
    assert "keeps the others" in refused.value.message and "n: string" in refused.value.message
    assert lake.version(DS).commit_id == 1
    assert _rows(lake) == sorted(FIRST)
    # Nothing is kept when every held partition is replaced: the schema may change.
    whole = pa.table({"region": ["JP", "UK"], "day": ["2026-11-01", "2026-11-01"], "n": ["a", "b"]})
    with lake.transaction(DS, "SNAPSHOT", partitions=[{"region": "JP"}, {"region": "UK"}]) as txn:
        txn.write(whole)
    assert txn.versions[DS].commit_id == 2
    assert {f["name"]: f["type"] for f in txn.versions[DS].schema_fields}["n"] == "string"
    assert sorted(r["n"] for r in lake.read_arrow(DS).to_pylist()) == ["a", "b"]


def test_update_and_delete_report_the_partitions_they_changed(lake: Lake) -> None:
    _seed(lake)
    jp_day1 = lake.files(DS, partitions={"region": "JP", "day": "2026-11-01"})[0].path
    with lake.transaction(DS, "DELETE") as txn:
        txn.remove(jp_day1)
    assert txn.versions[DS].partitions == {
        "added": [],
        "appended": [],
        "replaced": [],
        "removed": ["region=JP/day=2026-11-01"],
    }
    uk = lake.files(DS, partitions={"region": "UK"})[0].path
    with lake.transaction(DS, "UPDATE") as txn:
        txn.remove(uk)
        txn.write(_table([("UK", "2026-11-01", 20)]))
    assert txn.versions[DS].partitions is not None
    assert txn.versions[DS].partitions["replaced"] == ["region=UK/day=2026-11-01"]
    assert _rows(lake) == [("JP", "2026-11-02", 3), ("UK", "2026-11-01", 20)]


def test_a_whole_snapshot_repartitions(lake: Lake) -> None:
    _seed(lake)
    with lake.transaction(DS, "SNAPSHOT", partition_by=["region"]) as txn:
        txn.write(_table(FIRST))
    assert sorted(lake.partitions(DS)) == ["region=JP", "region=UK"]
    assert _rows(lake, partitions={"region": "JP"}) == [FIRST[0], FIRST[2]]
    with pytest.raises(InvalidArgument, match="not by"):
        lake.read_arrow(DS, partitions={"day": "2026-11-01"})


def _refused(lake: Lake, match: str, **start: Any) -> None:
    frame = start.pop("frame")
    kind = start.pop("type", "APPEND")
    before = lake.version(DS).commit_id
    with (
        pytest.raises(InvalidArgument, match=match),
        lake.transaction(DS, kind, **start) as txn,
    ):
        txn.write(frame)
    assert lake.version(DS).commit_id == before
    assert _rows(lake) == sorted(FIRST)


@pytest.mark.parametrize(
    ("match", "start"),
    [
        (
            r"null or empty partition value in column 'region'",
            {"frame": _table([("", "2026-11-01", 1)])},
        ),
        (
            r"partition value 'a/b' of column 'region'.*contains '/'",
            {"frame": _table([("a/b", "2026-11-01", 1)])},
        ),
        (r"contains '='", {"frame": _table([("a=b", "2026-11-01", 1)])}),
        (r"contains '\\x00'", {"frame": _table([("a\x00b", "2026-11-01", 1)])}),
        (
            r"has no column 'day', which partitions it",
            {"frame": pa.table({"region": ["JP"], "n": [1]})},
        ),
        (
            r"replaces partitions \['region=JP'\], but the frame has rows in partition "
            r"region=UK/day=2026-11-01",
            {
                "type": "SNAPSHOT",
                "partitions": [{"region": "JP"}],
                "frame": _table([("UK", "2026-11-01", 1)]),
            },
        ),
        (
            r"only a SNAPSHOT replaces partitions",
            {"partitions": [{"region": "JP"}], "frame": _table(FIRST)},
        ),
        (
            r"partitioned by \['region', 'day'\], not by \['day'\]",
            {"partition_by": ["day"], "frame": _table(FIRST)},
        ),
        (
            r"not by \['country'\]",
            {"type": "SNAPSHOT", "partitions": [{"country": "JP"}], "frame": _table(FIRST)},
        ),
    ],
)
def test_bad_partitions_are_refused_and_nothing_is_committed(
    lake: Lake, match: str, start: dict[str, Any]
) -> None:
    _seed(lake)
    _refused(lake, match, **dict(start))


def test_null_partition_values_and_types_without_one_text_are_refused(lake: Lake) -> None:
    _seed(lake)
    nulls = pa.table(
        {
            "region": pa.array(["JP", None], pa.string()),
            "day": pa.array([date(2026, 11, 1)] * 2, pa.date32()),
            "n": pa.array([1, 2], pa.int64()),
        }
    )
    _refused(lake, "null or empty partition value in column 'region'", frame=nulls)
    with (
        pytest.raises(InvalidArgument, match="'at' of 'times' is timestamp"),
        lake.transaction("times", "SNAPSHOT", partition_by=["at"]) as txn,
    ):
        txn.write(pa.table({"at": pa.array([0], pa.timestamp("us"))}))


def test_the_partition_limit_is_a_setting(settings: Settings, tmp_path: Path) -> None:
    from dataclasses import replace

    lake = connect(replace(settings, partition_limit=2))
    with (
        pytest.raises(InvalidArgument, match="makes 3 partitions, more than the limit of 2"),
        lake.transaction(DS, "SNAPSHOT", partition_by=["region", "day"]) as txn,
    ):
        txn.write(_table(FIRST))
    assert lake.datasets() == [] or lake.datasets()[0].latest_commit_id is None


def test_appends_racing_a_repartition_conflict(lake: Lake) -> None:
    _seed(lake)
    append = lake.transaction(DS, "APPEND")
    append.write(_table([("JP", "2026-11-03", 9)]))
    with lake.transaction(DS, "SNAPSHOT", partition_by=["region"]) as txn:
        txn.write(_table(FIRST))
    with pytest.raises(CommitConflict, match="was partitioned by \\['region'\\]"):
        append.commit()
    # The append's container never joined the dataset.
    assert all(f.partition and f.partition.startswith("region=") for f in lake.files(DS))
    assert lake.version(DS).commit_id == 2


@pytest.mark.spark
def test_spark_writes_one_folder_per_key_and_reads_only_the_wanted(  # type: ignore[no-untyped-def]
    lake: Lake, spark
) -> None:
    frame = spark.createDataFrame(
        [("JP", "2026-11-23T14", 1), ("UK", "2026-11-23 14:00", 2), ("JP", "2026-11-23T15", 3)],
        "region string, hour string, n long",
    )
    with lake.transaction("raw/hourly", "SNAPSHOT", partition_by=["region", "hour"]) as txn:
        txn.write(frame)
    # Spark escapes ':' in folder names; the catalog keeps the value itself.
    assert sorted(lake.partitions("raw/hourly")) == [
        "region=JP/hour=2026-11-23T14",
        "region=JP/hour=2026-11-23T15",
        "region=UK/hour=2026-11-23 14:00",
    ]
    uk = lake.read("raw/hourly", partitions={"region": "UK"}, spark=spark)
    assert [tuple(r) for r in uk.collect()] == [("UK", "2026-11-23 14:00", 2)]
    assert len(uk.inputFiles()) == 1
    # The files keep every column, so Arrow reads them alike.
    assert lake.read_arrow("raw/hourly").num_rows == 3

    before = lake.version("raw/hourly").commit_id
    bad = spark.createDataFrame([(None, "h", 1)], "region string, hour string, n long")
    with (
        pytest.raises(InvalidArgument, match="null or empty partition value in column 'region'"),
        lake.transaction("raw/hourly", "APPEND") as txn,
    ):
        txn.write(bad)
    assert lake.version("raw/hourly").commit_id == before
    stamp = spark.createDataFrame([(1,)], "n long").selectExpr("current_timestamp() as at", "n")
    with (
        pytest.raises(InvalidArgument, match="'at' of 'raw/t' is timestamp"),
        lake.transaction("raw/t", "SNAPSHOT", partition_by=["at"]) as txn,
    ):
        txn.write(stamp)


def _fingerprint_of(lake: Lake, name: str, rows: list[tuple[str, str, int]]) -> str | None:
    """The fingerprint of ``rows`` written whole, partitioned alike, to dataset ``name``."""
    with lake.transaction(name, "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(_table(rows))
    return txn.versions[name].data_fingerprint


def test_partitioned_versions_have_fingerprints_that_add_up(lake: Lake) -> None:
    """A version that rewrites some partitions has the fingerprint of its rows: the same
    as its parent's when the rows are, the same as those rows written whole when not; and
    each partition keeps the commit whose rows it holds."""
    from strata.lake import partition_hashes

    _seed(lake)
    first = lake.version(DS).data_fingerprint
    assert first is not None and first == _fingerprint_of(lake, "check/a", FIRST)
    # JP's partitions rewritten with the rows they had: the version's data is the same.
    jp = [r for r in FIRST if r[0] == "JP"]
    with lake.transaction(DS, "SNAPSHOT", partitions=[{"region": "JP"}]) as txn:
        txn.write(_table(jp))
    assert txn.versions[DS].data_fingerprint == first
    # One partition changed: the fingerprint is that of the new rows, written whole.
    changed = [("JP", "2026-11-01", 10), ("JP", "2026-11-02", 3), ("UK", "2026-11-01", 2)]
    with lake.transaction(DS, "SNAPSHOT", partitions=[{"region": "JP", "day": "2026-11-01"}]) as t:
        t.write(_table([("JP", "2026-11-01", 10)]))
    third = t.versions[DS].data_fingerprint
    assert third is not None and third != first
    assert third == _fingerprint_of(lake, "check/b", changed)
    # An APPEND to one partition and a removal of another add up the same way.
    with lake.transaction(DS, "APPEND") as t:
        t.write(_table([("UK", "2026-11-01", 7)]))
    assert t.versions[DS].data_fingerprint == _fingerprint_of(
        lake, "check/c", [*changed, ("UK", "2026-11-01", 7)]
    )
    # Each partition's own rows: rewritten at 2 with the rows of 1, changed at 3.
    with lake.engine.connect() as conn:
        uuid = lake.version(DS).dataset_uuid
        held = partition_hashes.latest(conn, uuid, at=3)
    assert held["region=JP/day=2026-11-02"].data_commit_id == 1
    assert held["region=JP/day=2026-11-02"].commit_id == 2
    assert held["region=JP/day=2026-11-01"].data_commit_id == 3
    assert held["region=UK/day=2026-11-01"].data_commit_id == 1
    _data_versions_above_a_floor_are_exact(lake, uuid)


def _data_versions_above_a_floor_are_exact(lake: Lake, uuid: str) -> None:
    """Each key's data version at 3; with a floor, exact above it, and at or below it
    for the keys whose files last changed by then (only later hashes are read)."""
    from strata.lake import partition_hashes, partition_index

    jp1, jp2, uk1 = (
        "region=JP/day=2026-11-01",
        "region=JP/day=2026-11-02",
        "region=UK/day=2026-11-01",
    )
    with lake.engine.connect() as conn:
        changed = partition_index.changed_at(conn, uuid, 3, removed_too=True)
        assert changed == {jp1: 3, jp2: 2, uk1: 1}
        exact = partition_hashes.data_changed_at(conn, uuid, changed, 3)
        assert exact == {jp1: 3, jp2: 1, uk1: 1}
        for floor in (1, 2, 3):
            above = partition_hashes.data_changed_at(conn, uuid, changed, 3, after=floor)
            for key, version in exact.items():
                if version > floor:
                    assert above[key] == version, (floor, key)
                else:
                    assert above[key] <= floor, (floor, key)
            assert above[jp2] == (1 if floor < 2 else 2)  # the rewrite's hash read below 2 only


def test_spark_partition_writes_have_fingerprints(  # type: ignore[no-untyped-def]
    lake: Lake, spark
) -> None:
    """One partition written by Spark (as a partition run writes) adds its own hash; the
    version's fingerprint stays known and equals the same rows written whole."""
    schema = "region string, day string, n long"
    rows = [("JP", "d1", 1), ("UK", "d1", 2)]
    with lake.transaction("sp/parts", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        for r in rows:  # one write per partition, each within its key
            txn.write(spark.createDataFrame([r], schema), within={"region": r[0], "day": r[1]})
    first = txn.versions["sp/parts"].data_fingerprint
    with lake.transaction("sp/whole", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(spark.createDataFrame(rows, schema))
    assert first is not None and first == txn.versions["sp/whole"].data_fingerprint
    with lake.transaction("sp/parts", "SNAPSHOT", partitions=[{"region": "UK"}]) as txn:
        uk = spark.createDataFrame([("UK", "d1", 2)], schema)
        txn.write(uk, within={"region": "UK", "day": "d1"})
    assert txn.versions["sp/parts"].data_fingerprint == first


@pytest.mark.spark
def test_a_write_among_partitions_hashes_each_and_refuses_others(  # type: ignore[no-untyped-def]
    lake: Lake, spark
) -> None:
    """A write of several partitions' runs at once (``among``) knows each partition's
    hash, the one a write of that partition alone records; a row of any other partition
    is refused by name and nothing of the write is kept."""
    schema = "region string, day string, n long, note string, at timestamp"
    at = datetime(2026, 11, 1, 9, 30, 1, 250000, tzinfo=UTC)
    rows = [("JP", "d1", 1, None, at), ("JP", "d1", 5, "x", at), ("UK", "d1:2", 2, "y", None)]
    keys = {"region=JP/day=d1", "region=UK/day=d1:2"}
    with lake.transaction("sp/among", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(spark.createDataFrame(rows, schema), among=keys)
        assert txn.rows_by_partition("sp/among") == {"region=JP/day=d1": 2, "region=UK/day=d1:2": 1}
    with lake.transaction("sp/alone", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        for key in ({"region": "JP", "day": "d1"}, {"region": "UK", "day": "d1:2"}):
            mine = [r for r in rows if (r[0], r[1]) == (key["region"], key["day"])]
            txn.write(spark.createDataFrame(mine, schema), within=key)
    prints = lake.partition_fingerprints("sp/among")
    assert None not in prints.values() and prints == lake.partition_fingerprints("sp/alone")
    assert txn.versions["sp/alone"].data_fingerprint == lake.version("sp/among").data_fingerprint

    with lake.transaction("sp/among", "SNAPSHOT", partitions=[{"region": "JP"}]) as txn:
        stray = spark.createDataFrame(
            [("JP", "d1", 1, None, at), ("JP", "d9", 1, None, at)], schema
        )
        with pytest.raises(
            InvalidArgument,
            match=r"2 partitions together of 'sp/among' wrote "
            r"rows of partition region=JP/day=d9",
        ):
            txn.write(stray, among={"region=JP/day=d1", "region=JP/day=d2"})
        assert txn.rows_by_partition("sp/among") == {}
        txn.abort()
    assert lake.version("sp/among").commit_id == 1


@pytest.mark.spark
def test_a_batch_sees_watched_sums_per_partition_and_drops_one(  # type: ignore[no-untyped-def]
    lake: Lake, spark
) -> None:
    """A write among partitions observes the watched sums of each partition; dropping
    one partition's rows takes its files, sums and hash out, and the rest commit as a
    write of them alone would (the other partitions' files untouched)."""
    from pyspark.sql import functions as sf

    schema = "region string, day string, n long"
    rows = [("JP", "d1", 1), ("JP", "d1", -5), ("UK", "d1", 2), ("US", "d2", -3)]
    keys = {"region=JP/day=d1", "region=UK/day=d1", "region=US/day=d2"}
    watch = {"rows": sf.count(sf.lit(1)), "negative": sf.count_if(sf.col("n") < 0)}
    with lake.transaction("sp/batch", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.watch("sp/batch", watch)
        txn.write(spark.createDataFrame(rows, schema), among=keys)
        assert txn.watched("sp/batch") == {"rows": 4, "negative": 2}
        assert txn.watched("sp/batch", partition="region=JP/day=d1") == {"rows": 2, "negative": 1}
        assert txn.watched("sp/batch", partition="region=UK/day=d1") == {"rows": 1, "negative": 0}
        assert txn.pending_columns("sp/batch", ["n"], partition="region=US/day=d2").to_pylist() == [
            {"n": -3}
        ]
        txn.drop_partitions(["region=JP/day=d1"])
        assert txn.watched("sp/batch") == {"rows": 2, "negative": 1}
        dropped = txn.watched("sp/batch", partition="region=JP/day=d1")
        assert dropped == {"rows": 0, "negative": 0}
        assert txn.rows_by_partition("sp/batch") == {"region=UK/day=d1": 1, "region=US/day=d2": 1}
    assert set(lake.partitions("sp/batch")) == {"region=UK/day=d1", "region=US/day=d2"}
    assert sorted(r["n"] for r in lake.read_arrow("sp/batch").to_pylist()) == [-3, 2]
    with lake.transaction("sp/rest", "SNAPSHOT", partition_by=["region", "day"]) as txn:
        txn.write(spark.createDataFrame(rows[2:], schema), among=keys - {"region=JP/day=d1"})
    assert txn.versions["sp/rest"].data_fingerprint == lake.version("sp/batch").data_fingerprint
    assert lake.partition_fingerprints("sp/batch") == lake.partition_fingerprints("sp/rest")
    # On one machine Spark writes no Hadoop checksum file beside each container.
    found = [f for _, _, files in os.walk(lake.storage.local("")) for f in files]
    assert any(f.endswith(".parquet") for f in found)
    assert [f for f in found if f.endswith(".crc")] == []


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("a\x00b", r"contains '\\x00'"),
        ("a/b", r"partition value 'a/b' of column 'region'.*contains '/'"),
        ("a=b", r"contains '='"),
        ("", r"null or empty partition value in column 'region'"),
        ("x" * 5000, r"is too long: its folder name takes 5,008 bytes.*at most 255"),
    ],
    ids=["nul", "slash", "equals", "empty", "long"],
)
def test_spark_writes_refuse_bad_values_before_writing_with_arrows_words(  # type: ignore[no-untyped-def]
    lake: Lake, spark, value: str, match: str
) -> None:
    frame = spark.createDataFrame([(value, "2026-11-01", 1)], "region string, day string, n long")
    with (
        pytest.raises(InvalidArgument, match=match),
        lake.transaction("sp/bad", "SNAPSHOT", partition_by=["region", "day"]) as txn,
    ):
        txn.write(frame)
    assert not list(Path(lake.settings.lake_uri.removeprefix("file://")).rglob("*.parquet"))
    # The Arrow path says the same.
    with (
        pytest.raises(InvalidArgument, match=match),
        lake.transaction("ar/bad", "SNAPSHOT", partition_by=["region", "day"]) as txn,
    ):
        txn.write(pa.table({"region": [value], "day": ["2026-11-01"], "n": [1]}))


def test_spark_writes_check_the_partition_limit_before_writing(  # type: ignore[no-untyped-def]
    settings: Settings, spark
) -> None:
    from dataclasses import replace

    lake = connect(replace(settings, partition_limit=2))
    rows = [("JP", "d1", 1), ("UK", "d1", 2), ("US", "d1", 3)]
    frame = spark.createDataFrame(rows, "region string, day string, n long")
    with (
        pytest.raises(InvalidArgument, match="makes more than 2 partitions, the limit"),
        lake.transaction("sp/many", "SNAPSHOT", partition_by=["region", "day"]) as txn,
    ):
        txn.write(frame)
    assert not list(Path(lake.settings.lake_uri.removeprefix("file://")).rglob("*.parquet"))
