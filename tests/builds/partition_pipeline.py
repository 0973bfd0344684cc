"""A partitioned pipeline: hourly clicks per region into hourly and daily counts, each
region's day in its own time zone."""

from datetime import UTC, datetime, timedelta

from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df

ZONES = {"JP": 9, "UK": 0, "US": -5}


def to_local_day(key):
    hour = datetime.strptime(key["hour"], "%Y-%m-%dT%H").replace(tzinfo=UTC)
    local = hour + timedelta(hours=ZONES[key["region"]])
    return {"region": key["region"], "local_day": local.date().isoformat()}


@transform_df(
    Output("metrics/customer_hourly", partition_by=["region", "hour"]),
    clicks=Input("raw/clicks"),
)
def customer_hourly(clicks):
    if clicks.filter(F.col("customer") == "boom").limit(1).count():
        raise ValueError("a click from customer 'boom'")
    return clicks.groupBy("region", "hour", "customer").agg(F.count("*").alias("clicks"))


@transform_df(
    Output("metrics/customer_daily", partition_by=["region", "local_day"]),
    hourly=Input("metrics/customer_hourly", partition_map=to_local_day),
)
def customer_daily(hourly):
    zone = F.create_map(*[x for k, v in ZONES.items() for x in (F.lit(k), F.lit(v))])
    at = F.to_timestamp("hour", "yyyy-MM-dd'T'HH") + F.make_interval(hours=zone[F.col("region")])
    return (
        hourly.withColumn("local_day", F.date_format(at, "yyyy-MM-dd"))
        .groupBy("region", "local_day", "customer")
        .agg(F.sum("clicks").alias("clicks"))
    )
