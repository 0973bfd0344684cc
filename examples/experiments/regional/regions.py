"""The regional pipeline: each region's clicks per hour and per local day, built
partition by partition. One job per transform; one run per region and hour (or day), so
the JP team's late data rebuilds JP's partitions and nothing else. The demo adds it to
the pipelines folder in its last chapter."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from _experiments import REGION_ZONES
from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


def to_local_day(key):
    """The local day of the region a UTC hour's partition falls in (a JP day ends at
    midnight JST, 15:00 UTC)."""
    hour = datetime.strptime(key["hour"], "%Y-%m-%dT%H").replace(tzinfo=UTC)
    local = hour.astimezone(ZoneInfo(REGION_ZONES[key["region"]]))
    return {"region": key["region"], "local_day": local.date().isoformat()}


@transform_df(
    Output("regions/hourly", partition_by=["region", "hour"]),
    clicks=Input("raw/clicks"),
)
def hourly(clicks):
    """One region's hour (raw/clicks is partitioned by region and event hour): events,
    customers and sessions, retried beacons counted once."""
    return (
        clicks.dropDuplicates(["event_id"])
        .groupBy("region", "hour")
        .agg(
            F.count("*").alias("events"),
            F.countDistinct("customer_id").alias("customers"),
            F.countDistinct("session_id").alias("sessions"),
        )
    )


@transform_df(
    Output("regions/daily", partition_by=["region", "local_day"]),
    hourly=Input("regions/hourly", partition_map=to_local_day),
)
def daily(hourly):
    """One region's local day, summed over its hours."""
    zones = F.create_map(*[F.lit(x) for pair in REGION_ZONES.items() for x in pair])
    at = F.from_utc_timestamp(F.to_timestamp("hour", "yyyy-MM-dd'T'HH"), zones[F.col("region")])
    return (
        hourly.withColumn("local_day", F.date_format(at, "yyyy-MM-dd"))
        .groupBy("region", "local_day")
        .agg(
            F.sum("events").alias("events"),
            F.sum("sessions").alias("sessions"),
            F.count("*").alias("hours"),
        )
    )
