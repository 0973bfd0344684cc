"""Column lineage derived from real Spark plans: one test per construct, each against
the input fields and transformations a reader of the code would name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from strata.builds.columns import plan_lineage

Edges = dict[str, dict[tuple[str, str], set[str]]]


@pytest.fixture(scope="module")
def frames(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two small Parquet datasets, ``orders`` and ``users``, read from their folders."""
    from pyspark.sql import functions as F  # noqa: N812

    root = tmp_path_factory.mktemp("plans")
    orders = spark.range(20).select(
        F.col("id").alias("order_id"),
        (F.col("id") % 4).alias("user_id"),
        (F.col("id") * 1.5).alias("amount"),
        F.array(F.lit("a"), F.lit("b")).alias("tags"),
    )
    users = spark.range(4).select(
        F.col("id").alias("user_id"), F.concat(F.lit("u"), F.col("id")).alias("name")
    )
    orders.write.parquet(str(root / "orders"))
    users.write.parquet(str(root / "users"))
    return {
        "orders": spark.read.parquet(str(root / "orders")),
        "users": spark.read.parquet(str(root / "users")),
        "root": root,
    }


def _edges(frames: dict[str, Any], df: Any) -> Edges:
    """Output field -> (dataset, field) -> {"DIRECT/IDENTITY", …}."""
    root: Path = frames["root"]

    def dataset_of(uri: str) -> str | None:
        rest = uri.split(str(root), 1)[-1].strip("/")
        return rest.split("/", 1)[0] or None

    fields = plan_lineage.column_lineage_fields(df, "lake", dataset_of)
    assert fields is not None
    assert list(fields) == list(dict.fromkeys(df.columns))  # every output column, in order
    return {
        out: {
            (i["name"], i["field"]): {f"{t['type']}/{t['subtype']}" for t in i["transformations"]}
            for i in spec["inputFields"]
        }
        for out, spec in fields.items()
    }


ID, TR, AGG = "DIRECT/IDENTITY", "DIRECT/TRANSFORMATION", "DIRECT/AGGREGATION"


def test_select_rename_cast_and_arithmetic(frames: dict[str, Any]) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    o = frames["orders"]
    df = o.select(
        "order_id",
        F.col("user_id").alias("customer"),
        F.col("amount").cast("int").alias("whole"),
        (F.col("amount") * 2).alias("double"),
        F.lit(1).alias("one"),
    ).withColumn("order_id2", F.col("order_id"))
    e = _edges(frames, df)
    assert e["order_id"] == {("orders", "order_id"): {ID}}
    assert e["customer"] == {("orders", "user_id"): {ID}}
    assert e["whole"] == {("orders", "amount"): {TR}}
    assert e["double"] == {("orders", "amount"): {TR}}
    assert e["one"] == {}
    assert e["order_id2"] == {("orders", "order_id"): {ID}}


def test_a_column_renamed_twice_is_still_its_source(frames: dict[str, Any]) -> None:
    df = frames["orders"].withColumnRenamed("amount", "a1").withColumnRenamed("a1", "a2")
    assert _edges(frames, df)["a2"] == {("orders", "amount"): {ID}}


def test_filters_joins_and_grouping_are_indirect_edges_of_every_column(
    frames: dict[str, Any],
) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    o, u = frames["orders"], frames["users"]
    df = (
        o.where(F.col("amount") > 3)
        .join(u, "user_id")
        .groupBy("name")
        .agg(F.sum("amount").alias("total"), F.count(F.lit(1)).alias("n"))
    )
    e = _edges(frames, df)
    assert e["total"][("orders", "amount")] == {AGG, "INDIRECT/FILTER"}
    assert e["total"][("users", "name")] == {"INDIRECT/GROUP_BY"}
    assert e["total"][("orders", "user_id")] == {"INDIRECT/JOIN"}
    assert e["total"][("users", "user_id")] == {"INDIRECT/JOIN"}
    assert e["name"][("users", "name")] == {ID, "INDIRECT/GROUP_BY"}
    assert e["n"] == {k: v for k, v in e["total"].items() if k != ("orders", "amount")} | {
        ("orders", "amount"): {"INDIRECT/FILTER"}
    }


def test_window_functions_and_sorts(frames: dict[str, Any]) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F  # noqa: N812

    w = Window.partitionBy("user_id").orderBy("order_id")
    df = (
        frames["orders"]
        .select("order_id", F.sum("amount").over(w).alias("running"))
        .orderBy("running")
    )
    e = _edges(frames, df)
    # Sorted by ``running``: by everything it came from.
    assert e["running"][("orders", "amount")] == {AGG, "INDIRECT/SORT"}
    assert e["running"][("orders", "user_id")] == {"INDIRECT/WINDOW", "INDIRECT/SORT"}
    assert e["order_id"][("orders", "order_id")] == {ID, "INDIRECT/SORT"}
    assert e["order_id"][("orders", "amount")] == {"INDIRECT/SORT"}


def test_unions_take_each_side(frames: dict[str, Any]) -> None:
    o, u = frames["orders"], frames["users"]
    df = o.select("user_id").union(u.select("user_id"))
    both = {("orders", "user_id"): {ID}, ("users", "user_id"): {ID}}
    assert _edges(frames, df)["user_id"] == both


def test_conditionals_and_coalesce_over_two_inputs(frames: dict[str, Any]) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    df = (
        frames["orders"]
        .join(frames["users"], "user_id", "left")
        .select(
            F.when(F.col("amount") > 10, F.col("name")).otherwise(F.lit("small")).alias("label"),
            F.coalesce(F.col("name"), F.col("order_id").cast("string")).alias("either"),
        )
    )
    e = _edges(frames, df)
    assert e["label"][("orders", "amount")] == {"INDIRECT/CONDITIONAL"}
    assert e["label"][("users", "name")] == {TR}
    assert e["either"][("users", "name")] == {TR}
    assert e["either"][("orders", "order_id")] == {TR}


def test_explode_and_python_udfs(frames: dict[str, Any]) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    shout: Callable[[Any], Any] = F.udf(lambda s: s.upper(), "string")
    df = frames["orders"].select(
        F.explode("tags").alias("tag"), shout(F.col("order_id").cast("string")).alias("loud")
    )
    e = _edges(frames, df)
    assert e["tag"] == {("orders", "tags"): {TR}}
    assert e["loud"] == {("orders", "order_id"): {TR}}


def test_select_star_after_a_self_join_with_duplicate_names(frames: dict[str, Any]) -> None:
    """Spark renumbers the second side's columns; both sides still read ``orders``."""
    from pyspark.sql import functions as F  # noqa: N812

    o = frames["orders"]
    left, right = o.alias("l"), o.alias("r")
    df = left.join(right, F.col("l.order_id") == F.col("r.user_id")).select("*")
    fields = _edges(frames, df)
    assert len(df.columns) == 8 and df.columns[0] == df.columns[4] == "order_id"
    # Duplicate names share one entry; each still comes from orders.order_id alone.
    assert {k for k in fields["order_id"] if "IDENTITY" in str(fields["order_id"][k])} == {
        ("orders", "order_id")
    }
    assert fields["amount"][("orders", "amount")] == {ID}
    assert fields["amount"][("orders", "user_id")] == {"INDIRECT/JOIN"}


def test_rows_made_in_spark_have_no_lake_sources(spark: Any, frames: dict[str, Any]) -> None:
    df = spark.range(3).withColumnRenamed("id", "n")
    assert _edges(frames, df) == {"n": {}}
