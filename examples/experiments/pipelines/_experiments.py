"""What both pipelines share: regions' local days, buckets, and the experiment-level
aggregation, registered once per pipeline (hourly, built incrementally, and daily)."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, incremental, transform, transform_df

# Each region's day ends at local midnight.
REGION_ZONES = {"US": "America/New_York", "UK": "Europe/London", "JP": "Asia/Tokyo"}


def local_day(ts, region):
    """The region's local calendar day of a UTC timestamp."""
    zones = F.create_map(*[F.lit(x) for pair in REGION_ZONES.items() for x in pair])
    return F.to_date(F.from_utc_timestamp(F.col(ts), zones[F.col(region)]))


def bucket_of(experiment_id, customer_id):
    """A customer's bucket, A or B, fixed for the life of an experiment. MD5, not CRC32:
    CRC32's low bit would put a customer in the same bucket of every experiment."""
    key = F.concat_ws(":", F.col(experiment_id), F.col(customer_id))
    head = F.conv(F.substring(F.md5(key), 1, 8), 16, 10).cast("long")
    return F.when(head % 2 == 1, F.lit("B")).otherwise(F.lit("A"))


def periods_in(frame, period):
    """The distinct values of ``period`` in a (small) frame, for a filter that lets
    Parquet skip the files of other periods."""
    return [row[0] for row in frame.select(period).distinct().collect()]


def experiment_totals(customers, period):
    """Customer metrics summed per experiment, bucket, region and period. A customer
    may have several rows in one period (late clicks add rows): every measure is a sum,
    and customers are counted once."""
    per = customers.groupBy("experiment_id", "bucket", "region", period)
    totals = per.agg(
        F.countDistinct("customer_id").alias("customers"),
        F.sum("clicks").alias("clicks"),
        F.sum("sessions").alias("sessions"),
        F.sum("latency_ms_total").alias("latency_ms_total"),
        F.sum("timed_clicks").alias("timed_clicks"),
    )
    return totals.select(
        "experiment_id",
        "bucket",
        "region",
        period,
        "customers",
        "clicks",
        "sessions",
        F.round(F.col("clicks") / F.col("customers"), 3).alias("clicks_per_customer"),
        F.round(F.col("latency_ms_total") / F.col("timed_clicks"), 1).alias("mean_latency_ms"),
    )


def experiment_level(period, customers, output):
    """One aggregation for any period, registered in each pipeline: one job per parent.
    Rebuilt whole at each build (the daily one)."""

    @transform_df(Output(output), customers=Input(customers))
    def experiment_metrics(customers):
        return experiment_totals(customers, period)

    return experiment_metrics


def incremental_experiment_level(period, customers, output):
    """The same aggregation built incrementally (the hourly one): the periods the new
    customer rows touch are summed again from the current rows of those periods alone,
    and replace their old totals; the other periods' totals are kept as they were."""

    @incremental()
    @transform(out=Output(output), customers=Input(customers))
    def experiment_metrics(customers, out):
        touched = periods_in(customers.dataframe(), period)
        rows = customers.dataframe("current").where(F.col(period).isin(touched))
        fresh = experiment_totals(rows, period)
        kept = out.dataframe("previous", schema=fresh.schema)
        out.set_mode("replace")
        out.write_dataframe(kept.where(~F.col(period).isin(touched)).unionByName(fresh))

    return experiment_metrics
