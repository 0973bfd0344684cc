"""The options Strata starts a SparkSession with: what the catalog needs on every master,
one machine's sizes on local masters only."""

from __future__ import annotations

import pytest

from strata.lake.spark import is_local, session_options


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local-cluster[2,1,1024]"])
def test_local_masters_get_one_machines_sizes(master: str) -> None:
    assert is_local(master)
    options = session_options(master)
    assert options["spark.sql.shuffle.partitions"] == "4"
    assert options["spark.driver.memory"] == "2g"
    assert options["spark.hadoop.fs.file.impl"] == "org.apache.hadoop.fs.RawLocalFileSystem"
    assert options["spark.sql.sources.parallelPartitionDiscovery.parallelism"] == "8"


@pytest.mark.parametrize(
    "master", ["spark://10.0.0.5:7077", "yarn", "k8s://https://api.example:6443"]
)
def test_cluster_masters_keep_their_own_sizes(master: str) -> None:
    # Strata's options override spark-defaults.conf, so it sets none of a cluster's sizes.
    assert not is_local(master)
    options = session_options(master)
    assert "spark.sql.shuffle.partitions" not in options
    assert "spark.driver.memory" not in options
    assert "spark.hadoop.fs.file.impl" not in options
    assert "spark.sql.sources.parallelPartitionDiscovery.parallelism" not in options
    assert options["spark.sql.session.timeZone"] == "UTC"
    assert options["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
