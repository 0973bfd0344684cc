"""Request bodies of the Marquez write API (pydantic lives only in this package)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

_Name = Field(min_length=1, max_length=1024)


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class NamespaceIn(_Body):
    owner_name: str = Field(alias="ownerName", min_length=1, max_length=1024)
    description: str | None = None


class SourceIn(_Body):
    type: str = Field(min_length=1, max_length=64)
    connection_url: str = Field(alias="connectionUrl", min_length=1)
    description: str | None = None


class FieldIn(_Body):
    name: str = Field(min_length=1, max_length=1024)
    type: str | None = None
    description: str | None = None
    tags: list[str] = []


class DatasetIn(_Body):
    type: Literal["DB_TABLE", "STREAM"]
    physical_name: str = Field(alias="physicalName", min_length=1, max_length=1024)
    source_name: str = Field(alias="sourceName", min_length=1, max_length=1024)
    fields: list[FieldIn] = []
    tags: list[str] = []
    description: str | None = None
    run_id: UUID | None = Field(default=None, alias="runId")
    schema_location: str | None = Field(default=None, alias="schemaLocation")


class DatasetIdIn(_Body):
    namespace: str = Field(min_length=1, max_length=1024)
    name: str = Field(min_length=1, max_length=1024)


class JobIn(_Body):
    type: Literal["BATCH", "STREAM", "SERVICE"]
    inputs: list[DatasetIdIn] = []
    outputs: list[DatasetIdIn] = []
    location: str | None = None
    description: str | None = None
    context: dict[str, Any] = {}
    run_id: UUID | None = Field(default=None, alias="runId")


class RunIn(_Body):
    id: UUID | None = None
    nominal_start_time: datetime | None = Field(default=None, alias="nominalStartTime")
    nominal_end_time: datetime | None = Field(default=None, alias="nominalEndTime")
    args: dict[str, Any] | None = None  # as written: see routes.jobs.marquez_args


class TagIn(_Body):
    description: str | None = None
