"""OpenLineage's Dataproc scenario from its compatibility tests (create Hive table t1,
insert into it, create t2 as a select from t1), moved to a namespace and runs of a
test's own."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

SPARK = (
    Path(__file__).parents[2].parent
    / "shared/conformance/events/compat/spark_dataproc_simple_producer_test_complete/events"
)
HOST = "dataproc-producer-test-m"


def dataproc_events(ns: str) -> list[dict[str, Any]]:
    """The scenario's 16 events in the order sent, the cluster's host replaced by ``ns``
    and the jobs' namespace ``default`` by ``ns`` itself (so ``hdfs://{ns}`` holds the
    tables' paths and ``hive://{ns}:9083`` their names), and every run id made the
    test's own. Its last event writes a version of t2 without
    a ``columnLineage`` facet."""
    if not SPARK.is_dir():
        pytest.fail(f"the conformance corpus is missing: expected {SPARK}")
    texts = [SPARK.joinpath(f"{n}.json").read_text("utf-8") for n in range(1, 17)]
    runs = set(re.findall(r'"runId": "([0-9a-f-]{36})"', "\n".join(texts)))
    ours = {run: str(uuid.uuid5(uuid.NAMESPACE_URL, ns + run)) for run in runs}
    pattern = re.compile("|".join([HOST, *runs, '"default"']))
    ours['"default"'] = f'"{ns}"'  # the jobs' namespace (and their parents')
    return [json.loads(pattern.sub(lambda m: ours.get(m[0], ns), text)) for text in texts]
