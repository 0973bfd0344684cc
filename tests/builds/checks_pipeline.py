"""A test pipeline with data checks: orders cleaned under a key and an amount rule, a
total read from them, and an incremental log whose event ids must stay unique."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Check, Input, Output, incremental, transform_df
from strata import expectations as E  # noqa: N812


@transform_df(
    Output(
        "clean/orders",
        checks=[
            Check(E.primary_key("order_id"), "order id is a key"),
            Check(E.col("amount").gte(0), "no negative amounts", on_error="WARN"),
            Check(E.row_count().gt(0), "not empty"),
        ],
    ),
    orders=Input(
        "raw/orders",
        checks=[Check(E.schema().contains({"order_id": "bigint"}), "orders have ids")],
    ),
)
def clean_orders(orders):
    return orders.select("order_id", "amount")


@transform_df(Output("report/total"), orders=Input("clean/orders"))
def total(orders):
    return orders.agg(F.sum("amount").alias("amount"))


@incremental()
@transform_df(
    Output("log/events", checks=[Check(E.primary_key("event_id"), "event id is a key")]),
    events=Input("raw/events"),
)
def events(events):
    return events


@transform_df(
    Output(
        "daily/orders",
        partition_by=["day"],
        checks=[Check(E.col("amount").gte(0), "amounts are positive")],
    ),
    orders=Input("raw/daily"),
)
def daily(orders):
    return orders


@transform_df(Output("copy/orders"), orders=Input("raw/orders"))
def copy_orders(orders):
    """clean_orders without its checks: what judging them costs is the difference."""
    return orders.select("order_id", "amount")
