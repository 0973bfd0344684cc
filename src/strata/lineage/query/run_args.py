"""A run's ``args``, as Marquez reports them.

A run created by ``POST .../runs`` has the args of its request body (kept as the
``runArgs`` run facet). A run from OpenLineage events has the args Marquez derives from
its facets: ``nominal_start_time`` and ``nominal_end_time`` from ``nominalTime``, and
``run_id``, ``name``, ``namespace`` of its parent from ``parent``. Times are the strings
the event carried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from strata.lineage.parents import parent_facet
from strata.lineage.producer import PRODUCER


def run_args(facets: Mapping[str, Any]) -> dict[str, str]:
    given = facets.get("runArgs")
    if isinstance(given, dict) and isinstance(given.get("args"), dict):
        return {str(k): _text(v) for k, v in given["args"].items()}
    nominal = facets.get("nominalTime")
    if isinstance(nominal, dict) and nominal.get("_producer") == PRODUCER:
        return {}  # a POST .../runs without args: its nominal times are not args
    args: dict[str, str] = {}
    if isinstance(nominal, dict) and isinstance(nominal.get("nominalStartTime"), str):
        args["nominal_start_time"] = nominal["nominalStartTime"]
        if isinstance(nominal.get("nominalEndTime"), str):
            args["nominal_end_time"] = nominal["nominalEndTime"]
    parent = parent_facet(facets)
    if isinstance(parent, dict):
        run, job = parent.get("run"), parent.get("job")
        if isinstance(run, dict) and isinstance(job, dict):
            args["run_id"] = _text(run.get("runId"))
            args["name"] = _text(job.get("name"))
            args["namespace"] = _text(job.get("namespace"))
    return args


def _text(value: Any) -> str:
    """A facet value as a string of Marquez's ``Map<String, String>``: a string as it is, any
    other JSON value as its JSON text (``true``, ``1.5``), null as an empty string."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
