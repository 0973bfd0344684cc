"""The daily pipeline: each local day's customer metrics, the experiment-level metrics
of each day, and every experiment's cumulative result over its active days."""

from _experiments import experiment_level
from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


@transform_df(Output("metrics/customer_daily"), hourly=Input("metrics/customer_hourly"))
def customer_daily(hourly):
    """Each bucketed customer's metrics per local day (days end at local midnight), summed
    over their hourly rows."""
    keys = ("experiment_id", "bucket", "region", "customer_id", "local_day")
    return hourly.groupBy(*keys).agg(
        F.sum("clicks").alias("clicks"),
        F.sum("sessions").alias("sessions"),
        F.sum("latency_ms_total").alias("latency_ms_total"),
        F.sum("timed_clicks").alias("timed_clicks"),
        F.countDistinct("hour").alias("active_hours"),
    )


experiment_metrics = experiment_level(
    "local_day", "metrics/customer_daily", "metrics/experiment_daily"
)


@transform_df(
    Output("metrics/experiment_cumulative"),
    daily=Input("metrics/customer_daily"),
    experiments=Input("raw/experiments"),
    schedule="30 0 * * *",
)
def experiment_cumulative(daily, experiments):
    """Each experiment over all its active days so far: bucket B against A. `strata worker`
    builds it (and what it reads, when out of date) at 00:30 UTC each day."""
    per_bucket = daily.groupBy("experiment_id", "bucket").agg(
        F.countDistinct("customer_id").alias("customers"),
        F.sum("clicks").alias("clicks"),
        F.countDistinct("local_day").alias("active_days"),
    )
    rate = F.col("clicks") / F.col("customers")
    a = per_bucket.filter(F.col("bucket") == "A").select(
        "experiment_id", "active_days", F.col("customers").alias("customers_a"), rate.alias("a")
    )
    b = per_bucket.filter(F.col("bucket") == "B").select(
        "experiment_id", F.col("customers").alias("customers_b"), rate.alias("b")
    )
    both = a.join(b, "experiment_id", "full_outer").join(
        experiments.select("experiment_id", "description"), "experiment_id"
    )
    return both.select(
        "experiment_id",
        "description",
        "active_days",
        "customers_a",
        "customers_b",
        F.round("a", 3).alias("clicks_per_customer_a"),
        F.round("b", 3).alias("clicks_per_customer_b"),
        F.round((F.col("b") / F.col("a") - 1) * 100, 2).alias("lift_pct"),
    )
