"""Request bodies of the Marquez write API (pydantic lives only in this package)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from strata.api.inputs import NO_NUL, STORABLE_TIME_PATTERN, time_problem
from strata.limits import MAX_NAME_BYTES, name_problem


def _storable_name(value: str) -> str:
    problem = name_problem("name", value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _storable_time(value: datetime) -> datetime:
    problem = time_problem("time", value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _storable_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL character; remove it")
    return value


# PostgreSQL text cannot hold NUL, so no stored string may; the pattern says it in the document.
Text = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL}), AfterValidator(_storable_text)]
# A name the store can index; the JSON Schema can only say characters, the check is bytes.
Name = Annotated[
    str,
    Field(min_length=1, max_length=MAX_NAME_BYTES, json_schema_extra={"pattern": NO_NUL}),
    AfterValidator(_storable_name),
]
Time = Annotated[
    datetime,
    Field(json_schema_extra={"pattern": STORABLE_TIME_PATTERN}),
    AfterValidator(_storable_time),
]


# Lists a body may hold: far past any real table's fields or a job's datasets, and small
# enough that one request cannot make the server write without end.
MAX_ITEMS = 10_000
MAX_TAGS = 1_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class NamespaceIn(_Body):
    owner_name: Name = Field(alias="ownerName")
    description: Text | None = None


class SourceIn(_Body):
    type: Text = Field(min_length=1, max_length=64)
    connection_url: Text = Field(alias="connectionUrl", min_length=1)
    description: Text | None = None


class FieldIn(_Body):
    name: Name
    type: Text | None = None
    description: Text | None = None
    tags: list[Name] = Field(default=[], max_length=MAX_TAGS)


class DatasetIn(_Body):
    type: Literal["DB_TABLE", "STREAM"]
    physical_name: Name = Field(alias="physicalName")
    source_name: Name = Field(alias="sourceName")
    fields: list[FieldIn] = Field(default=[], max_length=MAX_ITEMS)
    tags: list[Name] = Field(default=[], max_length=MAX_TAGS)
    description: Text | None = None
    run_id: UUID | None = Field(default=None, alias="runId")
    schema_location: Text | None = Field(default=None, alias="schemaLocation")


class DatasetIdIn(_Body):
    namespace: Name
    name: Name


class JobIn(_Body):
    type: Literal["BATCH", "STREAM", "SERVICE"]
    inputs: list[DatasetIdIn] = Field(default=[], max_length=MAX_ITEMS)
    outputs: list[DatasetIdIn] = Field(default=[], max_length=MAX_ITEMS)
    location: Text | None = None
    description: Text | None = None
    context: dict[str, Any] = Field(default={}, max_length=MAX_ITEMS)
    run_id: UUID | None = Field(default=None, alias="runId")


class RunIn(_Body):
    id: UUID | None = None
    nominal_start_time: Time | None = Field(default=None, alias="nominalStartTime")
    nominal_end_time: Time | None = Field(default=None, alias="nominalEndTime")
    # Checked as written by routes.jobs.marquez_args; the schema says what it accepts.
    args: dict[str, Any] | None = Field(
        default=None,
        max_length=MAX_ITEMS,
        json_schema_extra={
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {
                "anyOf": [
                    {"type": "string", "pattern": NO_NUL},
                    {"type": "number"},
                    {"type": "boolean"},
                ]
            },
        },
    )


class TagIn(_Body):
    description: Text | None = None
