"""Spark writes whose row hash the Parquet writer sums as it writes each row.

Where Strata's jar is on the driver's class path (:mod:`strata.lake.spark_jar`) and the
executors share the driver's JVM (a local master), a write goes through
``java/HashedParquet.java``: the same Parquet files, with each row's hash (the SQL of
:func:`strata.lake.rowhash.hash_sql`) computed in the writer's generated code and summed
per task, the same sums :func:`strata.lake.rowhash.observed` gives. Observing them from
the frame (``Dataset.observe``) takes the rows out of the write's generated code and cost
about twice as much (``docs/benchmarks.md``, §B3, round four); elsewhere it is still the
way.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from strata.errors import LakeError
from strata.lake.rowhash import RowHash, from_sums, hash_sql
from strata.lake.spark import undone_on_error
from strata.lake.spark_jar import executors_in_driver

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FORMAT = "strata.spark.HashedParquet"
_ID, _SQL = "strata.hash.id", "strata.hash.sql"
_AVAILABLE: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def available(frame: DataFrame) -> bool:
    """Whether ``frame``'s session writes through the hashed writer: a local master whose
    JVM has the class (asked once per session)."""
    try:
        context = frame.sparkSession.sparkContext
    except Exception:  # a Spark Connect session: no JVM of its own to ask
        return False
    known = _AVAILABLE.get(context)
    if known is None:
        known = executors_in_driver(context.master or "") and _has_class(context)
        _AVAILABLE[context] = known
    return known


def _has_class(context: Any) -> bool:
    try:
        context._jvm.java.lang.Class.forName(FORMAT)
    except Exception:  # ClassNotFoundException through Py4J: a JVM started without the jar
        return False
    return True


def write(
    frame: DataFrame,
    uri: str,
    *,
    partition_by: Sequence[str] = (),
    fields: Sequence[Any] | None = None,
) -> RowHash:
    """Write ``frame``'s rows as Parquet files in the new folder ``uri`` (as
    ``frame.write.partitionBy(*partition_by).parquet`` does); the hash of the rows
    written, over their ``fields`` (all of the frame's by default; the partition columns
    are not in the files, so they cannot be hashed). Whatever the write raises is raised,
    and its sums are dropped."""
    token = uuid.uuid4().hex
    jvm: Any = frame.sparkSession.sparkContext._jvm
    writes = jvm.strata.spark.HashedParquet
    writer = frame.write.partitionBy(*partition_by) if partition_by else frame.write
    with undone_on_error(lambda: writes.take(token)):  # a failed write's sums dropped
        (
            writer.format(FORMAT)
            .option(_ID, token)
            .option(_SQL, hash_sql(frame.schema.fields if fields is None else fields))
            .mode("errorifexists")
            .save(uri)
        )
    sums = writes.take(token)
    if sums is None:  # the write never reached the writer's set-up: nothing was written
        raise LakeError(f"Spark wrote {uri!r} without its row hash; write it again")
    count, lo, mid, hi = (int(v) for v in sums)
    return from_sums(count, lo, mid, hi)
