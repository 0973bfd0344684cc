"""Spark's local file system without a forked ``chmod``.

Without Hadoop's native library, which pyspark does not ship, Hadoop's local file system
forks a ``chmod`` for every file and folder Spark creates: about 5 ms each, two for every
partition file, about 10 s of a write's tasks for 1,095 partitions (``docs/benchmarks.md``,
§B8, round nine). ``java/NioLocalFileSystem.java`` sets the same modes through java.nio;
local masters that start with Strata's jar (:mod:`strata.lake.spark_jar`) write their
``file:`` paths through it.
"""

from __future__ import annotations

from strata.lake.spark_jar import used
from strata.settings import Settings

CLASS = "strata.hadoop.NioLocalFileSystem"


def spark_options(settings: Settings) -> dict[str, str]:
    """The option that makes it the ``file:`` file system, where the jar is used."""
    return {"spark.hadoop.fs.file.impl": CLASS} if used(settings) is not None else {}
