"""The request schema of ``POST /api/v1/lineage``: an OpenLineage 2-0-2 event as this
server takes it, so a generated client sends what the server accepts.

It is the core spec's outline with the checks the server adds (a UUID run id, a time it
can read, names of at most 1,024 bytes, no NUL character in any key or text, a parent
facet naming a run and a job) and none of its own: extension points (extra properties
and custom facets) stay open to any JSON value, as OpenLineage keeps them.
"""

from __future__ import annotations

from typing import Any

from strata.api.inputs import NO_NUL
from strata.limits import MAX_NAME_BYTES

Schema = dict[str, Any]
_REF = "#/components/schemas/"

# A date-time :func:`strata.lineage.record.validate.parse_time` reads for any value the
# pattern admits: a real calendar day (days 29 to 31 left out), an offset within ±23:59.
EVENT_TIME = (
    "^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
    "T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?"
    "(Z|[+-](0[0-9]|1[0-9]|2[0-3]):[0-5][0-9])$"
)


def _ref(name: str) -> Schema:
    return {"$ref": _REF + name}


def _object(properties: Schema, required: list[str], **extra: Any) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "propertyNames": {"pattern": NO_NUL},
        "additionalProperties": _ref("JsonValue"),
        **extra,
    }


def _facets(deletable: bool) -> Schema:
    facet = _object(
        {
            "_producer": _ref("Text"),
            "_schemaURL": _ref("Text"),
            **({"_deleted": {"type": "boolean"}} if deletable else {}),
        },
        ["_producer", "_schemaURL"],
    )
    return {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": facet}


def _dataset(io_facets: str | None) -> Schema:
    properties: Schema = {
        "namespace": _ref("Name"),
        "name": _ref("Name"),
        "facets": _facets(True),
    }
    if io_facets is not None:
        properties[io_facets] = _facets(False)
    return _object(properties, ["namespace", "name"])


def _common(extra: Schema, required: list[str], **more: Any) -> Schema:
    properties = {
        "eventTime": {"type": "string", "pattern": EVENT_TIME},
        "producer": _ref("Text"),
        "schemaURL": _ref("Text"),
        **extra,
    }
    return _object(properties, ["eventTime", "producer", *required], **more)


def _job() -> Schema:
    return _object(
        {"namespace": _ref("Name"), "name": _ref("Name"), "facets": _facets(True)},
        ["namespace", "name"],
    )


def _parent() -> Schema:
    named = {"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES, "pattern": NO_NUL}
    return _object(
        {
            "_producer": _ref("Text"),
            "_schemaURL": _ref("Text"),
            "run": _object({"runId": {"type": "string", "format": "uuid"}}, ["runId"]),
            "job": _object({"namespace": named, "name": named}, ["namespace", "name"]),
        },
        ["_producer", "_schemaURL", "run", "job"],
    )


def components() -> dict[str, Schema]:
    """The schemas ``LineageEvent`` and what it refers to, for ``components.schemas``."""
    io = {
        "inputs": {"type": "array", "items": _dataset("inputFacets")},
        "outputs": {"type": "array", "items": _dataset("outputFacets")},
    }
    run_facets = _facets(False)
    run_facets["properties"] = {"parent": _parent()}
    run = _object({"runId": {"type": "string", "format": "uuid"}, "facets": run_facets}, ["runId"])
    event_types = ["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]
    return {
        "Text": {"type": "string", "pattern": NO_NUL},
        "Name": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_NAME_BYTES,
            "pattern": NO_NUL,
            "description": f"1 to {MAX_NAME_BYTES:,} bytes of UTF-8, no NUL character",
        },
        "JsonValue": {
            "description": "any JSON value without NaN, infinities or NUL characters",
            "anyOf": [
                _ref("Text"),
                {"type": ["number", "boolean", "null"]},
                {"type": "array", "items": _ref("JsonValue")},
                {
                    "type": "object",
                    "propertyNames": {"pattern": NO_NUL},
                    "additionalProperties": _ref("JsonValue"),
                },
            ],
        },
        "RunEvent": _common(
            {"eventType": {"enum": event_types}, "run": run, "job": _job(), **io},
            ["run", "job"],
        ),
        "JobEvent": _common({"job": _job(), **io}, ["job"], **{"not": {"required": ["run"]}}),
        "DatasetEvent": _common(
            {"dataset": _dataset(None)},
            ["dataset"],
            **{"not": {"anyOf": [{"required": ["run"]}, {"required": ["job"]}]}},
        ),
        "LineageEvent": {
            "description": "An OpenLineage 2-0-2 RunEvent, JobEvent or DatasetEvent",
            "anyOf": [_ref("RunEvent"), _ref("JobEvent"), _ref("DatasetEvent")],
        },
    }
