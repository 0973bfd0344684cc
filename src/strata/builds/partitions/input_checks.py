"""The input checks of a batch of partition runs: each partition's input rows judged as
its own run judges them, the figures of them all found in one Spark pass per input.

Each input row is labelled with the partition whose run reads it: a filtered input's
row by its own key columns, a partitioned input's row by the output partitions its
input partition feeds (a row feeding two is counted for both), and an input read whole
by one label every partition shares. Judging a partition then reads nothing more
unless one of its checks failed (to show the rows that broke it). A label no partition
of the batch spells (a key value written otherwise than its folder) makes every
partition be judged from its own rows instead, as its own run would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strata.builds.checks import judging
from strata.builds.checks.check import Check, CheckResult
from strata.builds.checks.judging import Target
from strata.builds.execution import incremental
from strata.builds.execution.execute import Judge, input_handles
from strata.builds.partitions.planning import Layout
from strata.builds.partitions.reads import batch_of, filtered, partition_of
from strata.builds.programs.discovery import Declared
from strata.lake import partitions as pkeys
from strata.lake.registry import Version
from strata.lake.service import Lake

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

LABEL = "_s_partition"  # the column naming the partition whose run reads a row


@dataclass
class InputsJudged:
    """Each partition's input check results, and the partitions they stop."""

    checks: dict[str, list[CheckResult]]  # by key text
    stopped: dict[str, Exception]  # key text -> the failure its run ends with


def judge_inputs(
    lake: Lake,
    spark: SparkSession,
    item: Declared,
    inputs: Mapping[str, Version],
    layout: Layout,
    keys: Sequence[str],
) -> InputsJudged:
    """The input checks of the runs of ``keys``, each partition's on its own input rows.
    As in a run alone, a partition's first input whose FAIL check fails stops it, and
    its later inputs are not judged."""
    plan = incremental.whole(item, inputs)
    batch = input_handles(lake, spark, item, inputs, plan, batch_of(item, inputs, layout, keys))
    own = {
        k: input_handles(lake, spark, item, inputs, plan, partition_of(item, inputs, layout, k))
        for k in keys
    }
    judged = InputsJudged({k: [] for k in keys}, {})
    for p, inp in item.transform.inputs.items():
        if not inp.checks:
            continue
        frame = batch[p].dataframe()
        measured = _measured(spark, frame, inputs[p], layout, keys, inp.checks)
        types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        for key in keys:
            if key in judged.stopped:
                continue
            found = measured.get(key) if measured is not None else None
            target = Target(inp.name, "input", own[key][p].dataframe, types=types, measured=found)
            try:
                Judge(item, judged.checks[key], key)(target, inp.checks)
            except Exception as exc:
                judged.stopped[key] = exc
    return judged


def _measured(
    spark: SparkSession,
    frame: DataFrame,
    v: Version,
    layout: Layout,
    keys: Sequence[str],
    checks: Sequence[Check],
) -> dict[str, dict[str, Any]] | None:
    """Each partition's figures for ``checks`` from one pass over ``frame`` (the batch's
    rows of input ``v``); None when the rows cannot be told apart by partition, or the
    pass fails (each partition's own judging then says why)."""
    labelled = _labelled(spark, frame, v, layout, keys)
    try:
        by_label, empty = judging.measure_by_group(labelled, LABEL, checks)
    except Exception:
        return None
    shared = v.dataset in layout.whole and not filtered(v, layout)
    label_of = dict.fromkeys(keys, "") if shared else {k: k for k in keys}
    if not set(by_label) <= set(label_of.values()):
        return None
    return {k: by_label.get(label_of[k], empty) for k in keys}


def _labelled(
    spark: SparkSession, frame: DataFrame, v: Version, layout: Layout, keys: Sequence[str]
) -> DataFrame:
    """``frame`` with each row's partition in column :data:`LABEL` (NULL where its key
    matches none of the batch's)."""
    from pyspark.sql import functions as sf

    name = v.dataset
    if filtered(v, layout):
        return frame.withColumn(LABEL, _key_text(layout.by))
    if name in layout.whole:
        return frame.withColumn(LABEL, sf.lit(""))
    feeds = [(src, key) for key in keys for src in layout.sources.get(key, {}).get(name, [])]
    if not feeds:  # no partition of it feeds the batch: it reads no rows
        return frame.withColumn(LABEL, sf.lit(None).cast("string"))
    by = list(pkeys.parse_text(feeds[0][0]))
    if all(src == key for src, key in feeds):  # the input's keys are the output's
        return frame.withColumn(LABEL, _key_text(by))
    fed = spark.createDataFrame(feeds, f"_s_in string, {LABEL} string")
    with_source = frame.withColumn("_s_in", _key_text(by))
    return with_source.join(sf.broadcast(fed), "_s_in", "left").drop("_s_in")


def _key_text(by: Sequence[str]) -> Column:
    """A row's key text (:func:`pkeys.key_text`) from its columns ``by``, each value
    spelt as a partition folder spells it."""
    from pyspark.sql import functions as sf

    return sf.concat_ws("/", *[sf.concat(sf.lit(f"{c}="), sf.col(c).cast("string")) for c in by])
