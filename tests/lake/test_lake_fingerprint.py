"""Data fingerprints: the same rows give the same fingerprint whatever the files, the
partitioning, the row or column order; other rows give another."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from strata.errors import LakeError
from strata.lake import spark_hashed
from strata.lake.rowhash import EMPTY, RowHash, dataframe_row_hash, fingerprint, key_row_hashes
from strata.lake.service import Lake

ROWS = {"id": [1, 2, 3, 4, 5, 6], "name": ["a", "b", None, "d", "e", "f"]}


def _commit(lake: Lake, name: str, kind: str, *frames: object) -> str | None:
    with lake.transaction(name, type=kind) as txn:
        for frame in frames:
            txn.write(frame)
    return txn.versions[name].data_fingerprint


def _fp(lake: Lake, name: str, *frames: object) -> str | None:
    return _commit(lake, name, "SNAPSHOT", *frames)


def test_row_hash_combines_and_round_trips() -> None:
    a = RowHash("arrow-pandas", 3, 2**64 - 1, 5)
    b = RowHash("arrow-pandas", 2, 2, 2**63)
    both = a.combine(b)
    assert both == RowHash("arrow-pandas", 5, 1, 2**63 + 5)  # sums wrap modulo 2**64
    assert both == b.combine(a)
    assert EMPTY.combine(a) == a and a.combine(EMPTY) == a
    assert a.combine(RowHash("spark-xxh64", 1, 1, 1)) is None
    widest = RowHash("arrow-pandas", 2**64 - 1, 2**64 - 1, 2**64 - 1)
    for rh in (a, EMPTY, widest):
        assert RowHash.decode(rh.encode()) == rh
        assert len(rh.encode()) <= 64
    fields = [{"name": "id", "type": "int64"}, {"name": "name", "type": "string"}]
    assert fingerprint(fields, a) == fingerprint(fields[::-1], a)
    assert fingerprint(fields, a) != fingerprint([{**fields[0], "type": "int32"}, fields[1]], a)


def test_arrow_fingerprint_ignores_order_and_files_and_carries_appends(lake: Lake) -> None:
    whole = pa.table(ROWS)
    one = _fp(lake, "t/one", whole)
    assert one is not None and len(one) == 64
    shuffled = whole.take([5, 3, 1, 0, 2, 4])
    assert _fp(lake, "t/two_files", shuffled.slice(0, 2), shuffled.slice(2)) == one
    # One SNAPSHOT of 6 rows is two APPENDs of 3 in another order (the APPEND carry).
    _commit(lake, "t/appended", "APPEND", whole.slice(3))
    assert _commit(lake, "t/appended", "APPEND", whole.slice(0, 3)) == one
    assert lake.versions("t/appended")[-1].data_fingerprint == one
    # An UPDATE that removes nothing carries like an APPEND.
    _commit(lake, "t/updated", "APPEND", whole.slice(0, 4))
    assert _commit(lake, "t/updated", "UPDATE", whole.slice(4)) == one
    assert _fp(lake, "t/columns", whole.select(["name", "id"])) == one
    assert _fp(lake, "t/pandas", whole.to_pandas()) == one
    changed = pa.table({"id": [1, 2, 3, 4, 5, 7], "name": ROWS["name"]})
    assert _fp(lake, "t/changed", changed) != one
    assert _fp(lake, "t/fewer", whole.slice(1)) != one
    assert _fp(lake, "t/more", whole, whole.slice(0, 1)) != one  # a duplicate row counts
    # A second SNAPSHOT of the same rows replaces every file and keeps the fingerprint.
    assert _fp(lake, "t/one", shuffled) == one


def test_arrow_fingerprint_tells_values_apart(lake: Lake) -> None:
    def differ(name: str, a: pa.Table, b: pa.Table) -> None:
        assert _fp(lake, f"t/{name}_a", a) != _fp(lake, f"t/{name}_b", b), name

    i64 = pa.int64()
    differ(
        "null_column",
        pa.table({"a": pa.array([None], i64), "b": pa.array([1], i64)}),
        pa.table({"a": pa.array([1], i64), "b": pa.array([None], i64)}),
    )
    differ(
        "null_nan",
        pa.table({"f": pa.array([None, 1.0])}),
        pa.table({"f": pa.array([float("nan"), 1.0])}),
    )
    # With a null, pandas would make the column float64 and round 2**53 + 1.
    differ(
        "big_int",
        pa.table({"i": pa.array([2**53, None], i64)}),
        pa.table({"i": pa.array([2**53 + 1, None], i64)}),
    )
    floats = pa.list_(pa.float64())
    differ(
        "list_float",
        pa.table({"l": pa.array([[0.123456789123]], floats)}),
        pa.table({"l": pa.array([[0.123456789124]], floats)}),
    )
    differ(
        "list_long",
        pa.table({"l": pa.array([[1.0] * 2000], floats)}),
        pa.table({"l": pa.array([[1.0] * 1000 + [2.0] + [1.0] * 999], floats)}),
    )
    pair = pa.struct([("x", i64), ("y", i64)])
    differ(
        "struct_null",
        pa.table({"s": pa.array([{"x": None, "y": 1}], pair)}),
        pa.table({"s": pa.array([{"x": 1, "y": None}], pair)}),
    )


def test_arrow_fingerprint_hashes_what_is_stored(lake: Lake) -> None:
    # Containers keep microseconds: a nanosecond table stores what a microsecond one does.
    micros = pa.table({"at": pa.array([1_000, 2_000_001], pa.timestamp("us", "UTC"))})
    nanos = pa.table({"at": pa.array([1_000_000, 2_000_001_999], pa.timestamp("ns", "UTC"))})
    assert _fp(lake, "t/micros", micros) == _fp(lake, "t/nanos", nanos)
    # A pandas frame with datetimes (nanoseconds) and the same rows as Arrow.
    frame = pd.DataFrame({"n": [1, 2], "at": [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)]})
    table = pa.table({"n": pa.array([1, 2]), "at": pa.array(list(frame["at"]), pa.timestamp("us"))})
    assert _fp(lake, "t/from_pandas", frame) == _fp(lake, "t/from_arrow", table)
    # A dictionary column hashes as its values (its type, part of the fingerprint, differs).
    words = pa.array(["x", "y", "x"])
    _fp(lake, "t/dict", pa.table({"w": words.dictionary_encode()}))
    _fp(lake, "t/plain", pa.table({"w": words}))
    assert lake.version("t/dict").row_hash == lake.version("t/plain").row_hash


def test_removing_files_leaves_the_fingerprint_unknown(lake: Lake) -> None:
    _commit(lake, "t/upd", "APPEND", pa.table(ROWS))
    path = lake.files("t/upd")[0].path
    with lake.transaction("t/upd", type="UPDATE") as txn:
        txn.write(pa.table({"id": [9], "name": ["z"]}))
        txn.remove(path)
    assert txn.versions["t/upd"].data_fingerprint is None
    assert lake.version("t/upd").data_fingerprint is None
    # An unknown parent leaves the next APPEND unknown too; a SNAPSHOT knows again.
    assert _commit(lake, "t/upd", "APPEND", pa.table({"id": [10], "name": ["y"]})) is None
    assert _fp(lake, "t/upd", pa.table(ROWS)) == _fp(lake, "t/fresh", pa.table(ROWS))
    with lake.transaction("t/upd", type="DELETE") as txn:
        txn.remove(lake.files("t/upd")[0].path)
    assert txn.versions["t/upd"].data_fingerprint is None


def test_an_empty_snapshot_has_a_fingerprint(lake: Lake) -> None:
    empty = _fp(lake, "t/empty", pa.table({"id": pa.array([], pa.int64())}))
    assert empty is not None
    assert lake.version("t/empty").to_dict()["data_fingerprint"] == empty
    # APPENDs onto it carry from the empty hash.
    appended = _commit(lake, "t/empty", "APPEND", pa.table({"id": [1, 2]}))
    assert appended == _fp(lake, "t/two", pa.table({"id": [1, 2]}))
    # A SNAPSHOT that writes nothing empties the dataset and keeps its columns.
    with lake.transaction("t/two", type="SNAPSHOT"):
        pass
    assert lake.version("t/two").data_fingerprint == empty


@pytest.mark.spark
def test_spark_fingerprint_ignores_partitioning_and_matches_a_rerun(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    rows = list(zip(ROWS["id"], ROWS["name"], strict=True))
    df = spark.createDataFrame(rows, "id long, name string")
    one = _fp(lake, "s/one", df.repartition(1))
    assert one is not None
    four = _fp(lake, "s/four", df.repartition(4).sortWithinPartitions(df.id.desc()))
    assert four == one
    assert lake.version("s/four").file_count > 1
    assert _fp(lake, "s/cols", df.select("name", "id")) == one
    # APPENDs carry: two halves, the second first.
    _commit(lake, "s/appended", "APPEND", df.filter("id > 3"))
    assert _commit(lake, "s/appended", "APPEND", df.filter("id <= 3")) == one
    assert _fp(lake, "s/fewer", df.filter("id < 6")) != one
    changed = spark.createDataFrame([*rows[:5], (6, "g")], "id long, name string")
    assert _fp(lake, "s/changed", changed) != one
    null_a = spark.createDataFrame([(None, 1)], "a long, b long")
    null_b = spark.createDataFrame([(1, None)], "a long, b long")
    assert _fp(lake, "s/null_a", null_a) != _fp(lake, "s/null_b", null_b)
    # A DataFrame hashed without writing gives what the committed version recorded.
    version = lake.version("s/one")
    assert version.row_hash is not None
    rerun = dataframe_row_hash(df)
    assert rerun == RowHash.decode(version.row_hash)
    assert fingerprint(version.schema_fields, rerun) == one
    # Writes by two engines in one version cannot be compared: unknown.
    assert _fp(lake, "s/mixed", df, pa.table({"id": [7], "name": ["h"]})) is None


@pytest.mark.spark
def test_spark_fingerprint_of_nested_and_empty_frames(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    def one_row(sql: str) -> RowHash:
        return dataframe_row_hash(spark.sql(sql))

    # xxhash64 skips nulls inside structs and arrays: the JSON text stands for them.
    assert one_row("select named_struct('x', cast(null as int), 'y', 1) s") != one_row(
        "select named_struct('x', 1, 'y', cast(null as int)) s"
    )
    assert one_row("select array(cast(null as int), 1) a") != one_row(
        "select array(1, cast(null as int)) a"
    )
    assert one_row("select map('k', 1) m") != one_row("select map('k', 2) m")
    empty = spark.createDataFrame([], "id long, name string")
    assert dataframe_row_hash(empty) == EMPTY
    assert _fp(lake, "s/empty", empty) is not None
    assert lake.version("s/empty").row_count == 0


# Row hashes recorded by earlier releases: a change to how the hash is computed would make
# every built dataset look changed after an upgrade, so these values must never move.
_WIDE = ", ".join(
    f"CASE WHEN id % {i + 2} = 0 THEN NULL ELSE id * {i} END AS c{i}" for i in range(70)
)
_MIXED = """select id, cast(id % 3 as int) as small, if(id % 2 = 0, null, concat('n', id))
    as `odd name`, id / 4.0 as ratio, timestamp_micros(1700000000000000 + id * 1000001) as at,
    named_struct('x', if(id % 5 = 0, null, id), 'y', array(id, null)) as s,
    map('k', id) as m, array(timestamp_micros(1700000000000000 + id), null) as ts,
    cast(id as decimal(12, 3)) as d, id % 2 = 0 as flag,
    date_add(date'2026-01-01', cast(id as int)) as day, 1 as `a``b`
    from range(0, 40)"""


@pytest.mark.spark
def test_spark_row_hash_is_stable_across_releases(spark) -> None:  # type: ignore[no-untyped-def]
    mixed = spark.sql(_MIXED)
    assert dataframe_row_hash(mixed).encode() == (
        "spark-xxh64/1:28:573cdbe066f950480000000000000000"
    )
    # 71 columns: the null flags span two mask columns, the first a long.
    wide = spark.sql(f"select id, {_WIDE} from range(0, 25)")
    assert dataframe_row_hash(wide).encode() == (
        "spark-xxh64/1:19:7846f6b0c6ee70990000000000000000"
    )
    by_key = key_row_hashes(mixed, ["small", "flag"])
    assert {k: v.encode() for k, v in by_key.items()} == {
        ("0", "false"): "spark-xxh64/1:7:0dcf997917a900e70000000000000000",
        ("0", "true"): "spark-xxh64/1:7:b98218db2a2e36420000000000000000",
        ("1", "false"): "spark-xxh64/1:7:fb394485123bb3e50000000000000000",
        ("1", "true"): "spark-xxh64/1:6:0c0c98ebcc6d09de0000000000000000",
        ("2", "false"): "spark-xxh64/1:6:4ad27f75ac3835760000000000000000",
        ("2", "true"): "spark-xxh64/1:7:3dd2cca59a4125e60000000000000000",
    }
    # The parts add up: the whole frame's hash is the sum of its keys' hashes.
    total: RowHash | None = EMPTY
    for part in by_key.values():
        assert total is not None
        total = total.combine(part)
    assert total == dataframe_row_hash(mixed)


@pytest.mark.spark
def test_the_parquet_writer_sums_the_hash_the_observation_sees(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The test session is a local master started with Strata's jar (made by the test
    # command's `strata spark-cache`): its plain writes hash rows in the writer.
    mixed = spark.sql(_MIXED)
    assert spark_hashed.available(mixed)
    written = spark_hashed.write(mixed.repartition(3), (tmp_path / "mixed").as_uri())
    assert written == dataframe_row_hash(mixed)
    assert written.encode() == "spark-xxh64/1:28:573cdbe066f950480000000000000000"
    back = spark.read.parquet((tmp_path / "mixed").as_uri())
    assert back.count() == 40 and set(back.columns) == set(mixed.columns)
    wide = spark.sql(f"select id, {_WIDE} from range(0, 25)")
    assert spark_hashed.write(wide, (tmp_path / "wide").as_uri()).encode() == (
        "spark-xxh64/1:19:7846f6b0c6ee70990000000000000000"
    )
    empty = spark.createDataFrame([], "id long, name string")
    assert spark_hashed.write(empty, (tmp_path / "empty").as_uri()) == EMPTY


@pytest.mark.spark
def test_a_lake_write_through_the_hashing_writer_fails_whole(lake: Lake, spark) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F  # noqa: N812

    @F.udf("long")
    def refuse(n: int) -> int:
        if n == 3:
            raise ValueError(f"row {n} is bad")
        return n

    df = spark.range(0, 6).select(refuse("id").alias("id"))
    assert spark_hashed.available(df)
    with pytest.raises(LakeError, match="row 3 is bad"), lake.transaction("s/bad") as txn:
        txn.write(df)
    assert lake.versions("s/bad") == []
    assert list(Path(lake.storage.local("")).rglob("*.parquet")) == []
    # The session writes on: the next write's sums are its own.
    good = spark.range(0, 6)
    assert _fp(lake, "s/good", good) == _fp(lake, "s/good-again", good.repartition(2))
    assert lake.version("s/good").row_count == 6
