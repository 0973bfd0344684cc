"""Daily totals per region, built twice from the same code: its partitions' runs in one
Spark job (the default for shared keys), and one job each (``partition_local=False``);
the same for a copy of the events with data checks on its output."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Check, Input, Output, transform_df
from strata import expectations as E  # noqa: N812


def daily(events, targets):
    if events.filter(F.col("note") == "boom").limit(1).count():
        raise ValueError("an event noted 'boom'")
    totals = events.groupBy("region", "day").agg(
        F.count("*").alias("events"),
        F.sum("amount").alias("amount"),
        F.max("note").alias("note"),
        F.max("at").alias("last_at"),
    )
    return totals.join(targets, ["region", "day"], "left")


@transform_df(
    Output("metrics/together", partition_by=["region", "day"]),
    events=Input("raw/events"),
    targets=Input("raw/targets"),
)
def together(events, targets):
    return daily(events, targets)


@transform_df(
    Output("metrics/apart", partition_by=["region", "day"], partition_local=False),
    events=Input("raw/events"),
    targets=Input("raw/targets"),
)
def apart(events, targets):
    return daily(events, targets)


def noted(events):
    return events.select("region", "day", "amount", "note")


# As a run of one partition judges its own rows: a note is a key within a partition.
CHECKS = [
    Check(E.primary_key("note"), "notes are a key"),
    Check(E.col("amount").lt(100), "no huge amounts"),
    Check(E.col("amount").gte(1), "small amounts", on_error="WARN"),
    Check(E.row_count().gt(0), "not empty"),
]


@transform_df(
    Output("checked/together", partition_by=["region", "day"], checks=CHECKS),
    events=Input("raw/events"),
)
def checked_together(events):
    return noted(events)


@transform_df(
    Output("checked/apart", partition_by=["region", "day"], partition_local=False, checks=CHECKS),
    events=Input("raw/events"),
)
def checked_apart(events):
    return noted(events)


# The same kinds of checks on the inputs: each partition's run judges its own input rows
# (the events of its partition, the targets of its key, all the rates).
TARGET_CHECKS = [Check(E.col("target").gte(0), "targets not negative")]
RATE_CHECKS = [
    Check(E.row_count().gt(0), "rates present"),
    Check(E.col("rate").lt(2), "rates plausible", on_error="WARN"),
]


def gated(events, targets, rates):
    if events.filter(F.col("note") == "boom").limit(1).count():
        raise ValueError("an event noted 'boom'")
    rate = rates.agg(F.max("rate").alias("rate"))
    return noted(events).join(targets, ["region", "day"], "left").crossJoin(rate)


@transform_df(
    Output("gated/together", partition_by=["region", "day"]),
    events=Input("raw/events", checks=CHECKS),
    targets=Input("raw/targets", checks=TARGET_CHECKS),
    rates=Input("raw/rates", checks=RATE_CHECKS),
)
def gated_together(events, targets, rates):
    return gated(events, targets, rates)


@transform_df(
    Output("gated/apart", partition_by=["region", "day"], partition_local=False),
    events=Input("raw/events", checks=CHECKS),
    targets=Input("raw/targets", checks=TARGET_CHECKS),
    rates=Input("raw/rates", checks=RATE_CHECKS),
)
def gated_apart(events, targets, rates):
    return gated(events, targets, rates)


# A day's run reads every region's partition of that day.
DAY_CHECKS = [
    Check(E.primary_key("region", "note"), "notes are a key per region"),
    Check(E.col("amount").lt(100), "no huge amounts"),
    Check(E.col("amount").gte(1), "small amounts", on_error="WARN"),
]


def per_day(events):
    return events.groupBy("day").agg(F.count("*").alias("events"), F.sum("amount").alias("amount"))


@transform_df(
    Output("daily/together", partition_by=["day"]),
    events=Input("raw/events", checks=DAY_CHECKS),
)
def daily_together(events):
    return per_day(events)


@transform_df(
    Output("daily/apart", partition_by=["day"], partition_local=False),
    events=Input("raw/events", checks=DAY_CHECKS),
)
def daily_apart(events):
    return per_day(events)
