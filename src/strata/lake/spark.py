"""The SparkSession Strata reads and writes with: local by default, or the ``spark_master``
setting's cluster (``spark://``, ``yarn``, ``k8s://``)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from strata.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# What Strata's catalog relies on, on any master: UTC session times, and Parquet
# timestamps pyarrow reads as timestamps (Spark's default INT96 are not).
REQUIRED = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}
# Sizes for one machine, where the executors live in the driver. On a cluster they are
# left to its own configuration (spark-defaults.conf, PYSPARK_SUBMIT_ARGS): Strata's
# options would override those, and four shuffle partitions starve a cluster.
LOCAL_ONLY = {
    "spark.sql.shuffle.partitions": "4",
    "spark.driver.memory": "2g",
}


def is_local(master: str) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]`` and ``local-cluster[…]`` masters."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def session_options(master: str) -> dict[str, str]:
    """The Spark options Strata starts a session with on ``master``."""
    return {**REQUIRED, **(LOCAL_ONLY if is_local(master) else {})}


def get_spark(settings: Settings | None = None) -> SparkSession:
    """Return the active SparkSession, or start one configured for Strata."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    settings = settings or Settings.load()
    # Python workers (UDFs) run PYSPARK_PYTHON, else whatever `python3` is on the PATH,
    # which need not have pyspark, Strata or the pipeline's libraries. The driver's own
    # interpreter is the one known to have them; a cluster whose executors keep Python
    # elsewhere sets PYSPARK_PYTHON.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(settings.spark_master).appName("strata")
    for key, value in session_options(settings.spark_master).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
