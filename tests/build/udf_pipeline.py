"""A pipeline whose transform runs Python on the executors: a UDF calling a helper module
of the pipeline folder, and reporting which interpreter ran it."""

import sys

from _text import shout
from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


def exclaim(value):
    return shout(value)


def interpreter(_):
    return sys.prefix


@transform_df(Output("loud/users"), users=Input("raw/users"))
def loud(users):
    return users.select(
        "user",
        F.udf(exclaim, "string")("country").alias("country"),
        F.udf(interpreter, "string")("user").alias("python"),
    )
