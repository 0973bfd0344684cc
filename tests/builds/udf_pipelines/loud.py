"""A pipeline whose transform runs Python on the executors: a UDF calling a helper module
of the pipeline folder, and one reporting which interpreter ran it."""

import sys

from _text import shout
from pyspark.sql import functions as F  # noqa: N812

from strata import Input, Output, transform_df


def exclaim(value):
    return shout(value)


def interpreter(_):
    return sys.prefix


@transform_df(Output("loud/experiments"), experiments=Input("raw/experiments"))
def loud(experiments):
    return experiments.select(
        "experiment_id",
        F.udf(exclaim, "string")("description").alias("description"),
        F.udf(interpreter, "string")("experiment_id").alias("python"),
    )
