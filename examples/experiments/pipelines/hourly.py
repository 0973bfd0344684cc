"""The hourly pipeline: raw clicks cleaned, customers assigned to buckets, and each
hour's customer and experiment metrics."""

from _experiments import bucket_of, experiment_level, local_day
from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


@transform_df(Output("clean/clicks"), clicks=Input("raw/clicks"))
def clean_clicks(clicks):
    """One row per event (retried beacons dropped), with its hour and local day."""
    return (
        clicks.dropDuplicates(["event_id"])
        .withColumn("hour", F.date_trunc("hour", "event_time"))
        .withColumn("local_day", local_day("event_time", "region"))
    )


@transform_df(
    Output("experiments/buckets"),
    clicks=Input("clean/clicks"),
    experiments=Input("raw/experiments"),
)
def assign_buckets(clicks, experiments):
    """Every customer seen in a running experiment's regions, with their bucket and the
    hour they joined: the population grows hour by hour and nobody changes bucket."""
    running = (
        F.array_contains("regions", F.col("region"))
        & (F.col("local_day") >= F.col("start_day"))
        & (F.col("end_day").isNull() | (F.col("local_day") <= F.col("end_day")))
    )
    exposed = clicks.join(experiments, running)
    joined = exposed.groupBy("experiment_id", "start_day", "end_day", "region", "customer_id")
    return joined.agg(F.min("hour").alias("joined_hour")).withColumn(
        "bucket", bucket_of("experiment_id", "customer_id")
    )


@transform_df(
    Output("metrics/customer_hourly"),
    clicks=Input("clean/clicks"),
    buckets=Input("experiments/buckets"),
)
def customer_hourly(clicks, buckets):
    """Each bucketed customer's clicks, sessions and latency per hour, from the hour
    they joined to the experiment's last day."""
    joined = clicks.join(buckets, ["region", "customer_id"]).filter(
        (F.col("hour") >= F.col("joined_hour"))
        & (F.col("end_day").isNull() | (F.col("local_day") <= F.col("end_day")))
    )
    keys = ("experiment_id", "bucket", "region", "customer_id", "local_day", "hour")
    return joined.groupBy(*keys).agg(
        F.count("*").alias("clicks"),
        F.countDistinct("session_id").alias("sessions"),
        F.sum("latency_ms").alias("latency_ms_total"),
        F.count("latency_ms").alias("timed_clicks"),
    )


experiment_metrics = experiment_level(
    "hour", "metrics/customer_hourly", "metrics/experiment_hourly"
)
