"""An incremental pipeline: clicks cleaned as they come, and per-country totals kept up
to date from the new clean clicks (users are read whole)."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, incremental, transform, transform_df

TOTALS = "country string, clicks long, ms long"


@incremental()
@transform_df(Output("clean/clicks"), clicks=Input("raw/clicks"))
def clean_clicks(clicks):
    return clicks.filter(F.col("ms") >= 0)


@incremental(semantic_version=1, snapshot_inputs=["users"])
@transform(
    out=Output("metrics/per_country"), clicks=Input("clean/clicks"), users=Input("raw/users")
)
def per_country(clicks, users, out):
    new = clicks.dataframe().join(users.dataframe(), "user")
    added = new.groupBy("country").agg(F.count("*").alias("clicks"), F.sum("ms").alias("ms"))
    before = out.dataframe("previous", schema=TOTALS)
    both = before.unionByName(added).groupBy("country")
    out.set_mode("replace")
    out.write_dataframe(both.agg(F.sum("clicks").alias("clicks"), F.sum("ms").alias("ms")))
