"""The hourly pipeline: raw clicks cleaned, customers assigned to buckets, and each
hour's customer and experiment metrics. Every transform is incremental: an hourly build
reads the clicks that arrived since the last one, not the whole history."""

from _experiments import bucket_of, incremental_experiment_level, local_day, periods_in
from pyspark.sql import functions as F  # noqa: N812

from strata import Check, Input, Output, incremental, transform
from strata import expectations as E  # noqa: N812

# A click with no customer cannot be bucketed: such a batch is stopped at the door.
CLICK_CHECKS = [Check(E.not_null("customer_id"), "every click names its customer")]


@incremental()
@transform(
    out=Output(
        "clean/clicks",
        checks=[Check(E.primary_key("event_id"), "one row per event", on_error="WARN")],
    ),
    clicks=Input("raw/clicks", checks=CLICK_CHECKS),
)
def clean_clicks(clicks, out):
    """One row per event, with its hour and local day: retried beacons (duplicate event
    ids) are dropped, also against the events earlier builds kept for the same hours."""
    new = (
        clicks.dataframe()
        .dropDuplicates(["event_id"])
        .withColumn("hour", F.date_trunc("hour", "event_time"))
        .withColumn("local_day", local_day("event_time", "region"))
    )
    kept = out.dataframe("previous", schema=new.schema)
    seen = kept.where(F.col("hour").isin(periods_in(new, "hour"))).select("event_id")
    out.write_dataframe(new.join(seen, "event_id", "left_anti"))


@incremental(snapshot_inputs=["experiments"])
@transform(
    out=Output("experiments/buckets"),
    clicks=Input("clean/clicks"),
    experiments=Input("raw/experiments"),
)
def assign_buckets(clicks, experiments, out):
    """Every customer seen in a running experiment's regions, with their bucket and the
    hour they joined: the population grows hour by hour and nobody changes bucket. The
    new clicks' customers are merged into it (a late click can move a joined hour
    earlier), so a build reads the population, not the clicks of every hour."""
    running = (
        F.array_contains("regions", F.col("region"))
        & (F.col("local_day") >= F.col("start_day"))
        & (F.col("end_day").isNull() | (F.col("local_day") <= F.col("end_day")))
    )
    exposed = clicks.dataframe().join(experiments.dataframe(), running)
    keys = ("experiment_id", "start_day", "end_day", "region", "customer_id")
    new = exposed.groupBy(*keys).agg(F.min("hour").alias("joined_hour"))
    before = out.dataframe("previous", schema=new.schema.add("bucket", "string"))
    both = before.drop("bucket").unionByName(new).groupBy(*keys)
    out.set_mode("replace")
    out.write_dataframe(
        both.agg(F.min("joined_hour").alias("joined_hour")).withColumn(
            "bucket", bucket_of("experiment_id", "customer_id")
        )
    )


@incremental(snapshot_inputs=["buckets"])
@transform(
    out=Output("metrics/customer_hourly"),
    clicks=Input("clean/clicks"),
    buckets=Input("experiments/buckets"),
)
def customer_hourly(clicks, buckets, out):
    """Each bucketed customer's clicks, sessions (started: counted by their first click)
    and latency per hour, from the hour they joined to the experiment's last day. Each
    build adds rows for the new clicks; late clicks add a row to their hour, so readers
    sum a customer's rows of an hour."""
    joined = (
        clicks.dataframe()
        .join(buckets.dataframe(), ["region", "customer_id"])
        .filter(
            (F.col("hour") >= F.col("joined_hour"))
            & (F.col("end_day").isNull() | (F.col("local_day") <= F.col("end_day")))
        )
    )
    keys = ("experiment_id", "bucket", "region", "customer_id", "local_day", "hour")
    first_click = F.col("event_id").endswith("-0")
    out.write_dataframe(
        joined.groupBy(*keys).agg(
            F.count("*").alias("clicks"),
            F.count(F.when(first_click, 1)).alias("sessions"),
            F.sum("latency_ms").alias("latency_ms_total"),
            F.count("latency_ms").alias("timed_clicks"),
        )
    )


experiment_metrics = incremental_experiment_level(
    "hour", "metrics/customer_hourly", "metrics/experiment_hourly"
)
