"""Daily totals per region, built twice from the same code: its partitions' runs in one
Spark job (the default for shared keys), and one job each (``partition_local=False``)."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


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
