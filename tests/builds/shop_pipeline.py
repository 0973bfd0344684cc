"""A test pipeline: two roots, a diamond, a multi-output transform and one function
registered twice. Tests copy it into a scratch folder and edit it there."""

from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform, transform_df

SLOW_MS = 100


@transform_df(Output("clean/clicks"), clicks=Input("raw/clicks"))
def clean_clicks(clicks):
    return clicks.filter(F.col("ms") >= 0)


@transform_df(Output("clean/users"), users=Input("raw/users"))
def clean_users(users):
    return users.dropDuplicates(["user"])


@transform(slow=Output("clicks/slow"), fast=Output("clicks/fast"), clicks=Input("clean/clicks"))
def split(slow, fast, clicks):
    df = clicks.dataframe()
    slow.write_dataframe(df.filter(F.col("ms") >= SLOW_MS))
    fast.write_dataframe(df.filter(F.col("ms") < SLOW_MS))


def per_user(kind):
    @transform_df(
        Output(f"metrics/{kind}_per_user"),
        clicks=Input(f"clicks/{kind}"),
        users=Input("clean/users"),
    )
    def compute(clicks, users):
        joined = clicks.join(users, "user")
        return joined.groupBy("user", "country").agg(F.count("*").alias("clicks"))

    return compute


slow_per_user = per_user("slow")
fast_per_user = per_user("fast")


@transform_df(
    Output("report/users"),
    slow=Input("metrics/slow_per_user"),
    fast=Input("metrics/fast_per_user"),
)
def user_report(slow, fast):
    both = slow.withColumnRenamed("clicks", "slow").join(
        fast.withColumnRenamed("clicks", "fast"), ["user", "country"], "full_outer"
    )
    return both.fillna(0, ["slow", "fast"])


@transform_df(Output("report/countries"), users=Input("clean/users"))
def countries(users):
    return users.groupBy("country").agg(F.count("*").alias("users"))
