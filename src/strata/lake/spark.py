"""The local (or configured) SparkSession Strata reads and writes with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def get_spark(settings: Settings | None = None) -> SparkSession:
    """Return the active SparkSession, or start one configured for Strata."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = settings or Settings.load()
    builder = (
        SparkSession.builder.master(settings.spark_master)
        .appName("strata")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark's default INT96 timestamps are unreadable as timestamps by pyarrow readers.
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
