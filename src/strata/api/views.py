"""Marquez-shaped JSON (camelCase) from the read-side dataclasses, and the JSON responses."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import orjson
from fastapi.encoders import jsonable_encoder
from starlette.responses import Response

from strata.lake.partition_index import summary_dicts
from strata.lineage.query import column_lineage as cl
from strata.lineage.query import common, datasets, jobs, runs
from strata.lineage.query import graph as g
from strata.lineage.query import provenance as p
from strata.lineage.query import upstream_runs as ur
from strata.lineage.query.run_args import run_args
from strata.store.owners.namespaces import Namespace
from strata.store.owners.runs.rows import PartitionRun
from strata.store.owners.sources import Source
from strata.store.owners.tags import Tag

Json = dict[str, Any]
T = TypeVar("T")


def dumps(content: Any) -> bytes:
    """Compact UTF-8 JSON, as FastAPI would encode ``content`` but without its per-value walk."""
    try:
        return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        # Integers beyond 64 bits (facets are free-form JSON) and types orjson does not know.
        return json.dumps(
            jsonable_encoder(content), ensure_ascii=False, separators=(",", ":")
        ).encode()


def json_response(content: Any, status_code: int = 200) -> Response:
    """A JSON response whose body is encoded here, so the framework does not re-validate it."""
    return Response(dumps(content), status_code=status_code, media_type="application/json")


def page(key: str, items: common.Page[T], view: Callable[[T], Json]) -> Response:
    """A Marquez list: ``{key: [...], "totalCount": n}``."""
    return json_response({key: [view(x) for x in items.items], "totalCount": items.total})


def ts(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat().replace("+00:00", "Z")


def namespace(n: Namespace) -> Json:
    return {
        "name": n.name,
        "createdAt": ts(n.created_at),
        "updatedAt": ts(n.updated_at),
        "ownerName": n.owner,
        "description": n.description,
        "isHidden": n.is_hidden,
    }


def source(x: Source) -> Json:
    return {
        "type": x.type,
        "name": x.name,
        "createdAt": ts(x.created_at),
        "updatedAt": ts(x.updated_at),
        "connectionUrl": x.connection_url,
        "description": x.description,
    }


def tag(t: Tag) -> Json:
    return {"name": t.name, "description": t.description}


def _field(f: datasets.Field) -> Json:
    return {"name": f.name, "type": f.type, "tags": f.tags, "description": f.description}


def dataset_id(r: common.DatasetRef) -> Json:
    return {"namespace": r.namespace, "name": r.name}


def version_id(r: common.DatasetVersionRef) -> Json:
    return {"namespace": r.namespace, "name": r.name, "version": r.version}


def source_name(d: datasets.Dataset) -> str | None:
    """The dataset's source: ``default`` for one whose events named none, as in Marquez
    (a lake dataset's files are its source: none)."""
    return d.source_name or (None if d.is_lake else "default")


def physical_name(d: datasets.Dataset, lake: str) -> str:
    """A lake dataset's folder under today's lake URI ``lake`` (the store does not keep the
    lake's address, so a moved lake reads true); another producer's dataset as it said."""
    return f"{lake}/{d.uuid}" if d.is_lake else d.physical_name


def dataset(d: datasets.Dataset, lake: str) -> Json:
    return {
        "id": {"namespace": d.namespace, "name": d.name},
        "type": d.type,
        "name": d.name,
        "physicalName": physical_name(d, lake),
        "createdAt": ts(d.created_at),
        "updatedAt": ts(d.updated_at),
        "namespace": d.namespace,
        "sourceName": source_name(d),
        "fields": [_field(f) for f in d.fields],
        "tags": d.tags,
        "lastModifiedAt": ts(d.last_modified_at),
        "lastLifecycleState": d.lifecycle_state,
        "description": d.description,
        "currentVersion": d.current_version,
        "columnLineage": _column_lineage(d),
        "facets": d.facets,
        "deleted": d.deleted_at is not None,
        "isLake": d.is_lake,
        "commitId": d.commit_id,
        **_stream(d.type, d.facets),
    }


def _column_lineage(d: datasets.Dataset) -> list[Json] | None:
    """Marquez's ``columnLineage``: each output field and the input fields it came from."""
    return [
        {
            "name": c.field,
            "inputFields": [
                {
                    "namespace": ns,
                    "dataset": name,
                    "field": field,
                    "transformationDescription": description,
                    "transformationType": kind,
                }
                for ns, name, field, description, kind in c.inputs
            ],
        }
        for c in d.column_lineage
    ] or None


def _stream(kind: str, facets: dict[str, Any]) -> Json:
    """A stream's ``schemaLocation`` (Marquez's Stream and StreamVersion), kept in the
    ``schemaLocation`` facet a dataset PUT writes; nothing for a table."""
    if kind != "STREAM":
        return {}
    found = facets.get("schemaLocation")
    return {"schemaLocation": found.get("url") if isinstance(found, dict) else None}


def dataset_version(v: datasets.DatasetVersion, lake: str) -> Json:
    d = v.dataset
    return {
        "id": {"namespace": d.namespace, "name": d.name, "version": v.uuid},
        "type": d.type,
        "name": d.name,
        "physicalName": physical_name(d, lake),
        "createdAt": ts(v.created_at),
        "version": v.uuid,
        "namespace": d.namespace,
        "sourceName": source_name(d),
        "fields": [_field(f) for f in v.fields],
        "tags": d.tags,
        "lifecycleState": v.lifecycle_state,
        "description": d.description,
        "createdByRun": run(v.created_by_run) if v.created_by_run else None,
        "facets": v.facets,
        "commitId": v.commit_id,
        "rowCount": v.row_count,
        "contentHash": v.content_hash,
        **_stream(d.type, v.facets),
        # Strata's: what a partitioned lake version did to which partitions.
        **({"partitions": summary_dicts(v.partitions)} if v.partitions is not None else {}),
    }


def run(r: runs.Run) -> Json:
    job_version = (
        {"namespace": r.job_namespace, "name": r.job_name, "version": r.job_version_uuid}
        if r.job_version_uuid
        else None
    )
    return {
        "id": r.uuid,
        "createdAt": ts(r.created_at),
        "updatedAt": ts(r.updated_at),
        "nominalStartTime": ts(r.nominal_start_time),
        "nominalEndTime": ts(r.nominal_end_time),
        "state": r.state,
        "startedAt": ts(r.started_at),
        "endedAt": ts(r.ended_at),
        "durationMs": r.duration_ms,
        "args": run_args(r.facets),
        "jobVersion": job_version,
        "inputVersions": [version_id(v) for v in r.input_versions],
        "outputVersions": [version_id(v) for v in r.output_versions],
        "inputDatasetVersions": [
            {"datasetVersionId": version_id(v), "facets": r.io_facets_of("inputs", v)}
            for v in r.input_versions
        ],
        "outputDatasetVersions": [
            {"datasetVersionId": version_id(v), "facets": r.io_facets_of("outputs", v)}
            for v in r.output_versions
        ],
        "context": {},
        "facets": r.facets,
        "parentRunId": r.parent_run_uuid,
    }


def run_with_job(r: runs.Run) -> Json:
    """A run with the job it is a run of (Strata's routes: a Marquez run names no job)."""
    return {**run(r), "job": {"namespace": r.job_namespace, "name": r.job_name}}


def job(j: jobs.Job, latest_runs: bool = True) -> Json:
    """A Marquez job; without ``latest_runs`` (a graph node's data), no "latestRuns"."""
    latest = run(j.latest_run) if j.latest_run else None
    out: Json = {
        "id": {"namespace": j.namespace, "name": j.name},
        "type": j.type,
        "name": j.name,
        "simpleName": j.simple_name,
        "parentJobName": j.parent_job_name,
        "parentJobUuid": j.parent_job_uuid,
        "createdAt": ts(j.created_at),
        "updatedAt": ts(j.updated_at),
        "namespace": j.namespace,
        "inputs": [dataset_id(x) for x in j.inputs],
        "outputs": [dataset_id(x) for x in j.outputs],
        "location": j.location,
        "context": {},
        "description": j.description,
        "latestRun": latest,
        "latestRuns": [latest] if latest else [],
        "facets": j.facets,
        "currentVersion": j.current_version,
        "labels": [],
        "tags": j.tags,
    }
    if not latest_runs:
        del out["latestRuns"]
    return out


def partition_run(x: PartitionRun) -> Json:
    key = dict(part.split("=", 1) for part in x.partition.split("/"))
    return {
        "partition": key,
        "runId": x.run_uuid,
        "state": x.state,
        "startedAt": ts(x.started_at),
        "endedAt": ts(x.ended_at),
    }


def job_version(v: jobs.JobVersion) -> Json:
    return {
        "id": {"namespace": v.job_namespace, "name": v.job_name, "version": v.uuid},
        "name": v.job_name,
        "createdAt": ts(v.created_at),
        "updatedAt": ts(v.updated_at),
        "version": v.uuid,
        "fingerprint": v.version,
        "namespace": v.job_namespace,
        "location": v.location,
        "inputs": [dataset_id(x) for x in v.inputs],
        "outputs": [dataset_id(x) for x in v.outputs],
        "latestRun": run(v.latest_run) if v.latest_run else None,
        "facets": {},
        "programFacets": v.program_facets,
    }


def _edges(edges: list[tuple[str, str]]) -> list[Json]:
    return [{"origin": o, "destination": d} for o, d in edges]


def graph_node(n: g.GraphNode, lake: str) -> Json:
    data = dataset(n.data, lake) if n.type == "DATASET" else job(n.data, latest_runs=False)
    return {
        "id": n.id,
        "type": n.type,
        "data": data,
        "inEdges": _edges(n.in_edges),
        "outEdges": _edges(n.out_edges),
    }


def field_node(n: cl.FieldNode) -> Json:
    return {
        "id": n.id,
        "type": "DATASET_FIELD",
        "data": {
            "namespace": n.namespace,
            "dataset": n.dataset,
            "datasetVersion": n.dataset_version,
            "field": n.field,
            "fieldType": n.field_type,
            "transformationDescription": n.transformation_description,
            "transformationType": n.transformation_type,
            "inputFields": [
                {
                    "namespace": i.namespace,
                    "dataset": i.dataset,
                    "datasetVersion": i.dataset_version,
                    "field": i.field,
                    "transformationDescription": i.transformation_description,
                    "transformationType": i.transformation_type,
                }
                for i in n.input_fields
            ],
        },
        "inEdges": _edges(n.in_edges),
        "outEdges": _edges(n.out_edges),
    }


def upstream_run(u: ur.UpstreamRun) -> Json:
    return {
        "job": {"namespace": u.job_namespace, "name": u.job_name, "version": u.job_version},
        "run": {"id": u.run_id, "start": ts(u.start), "end": ts(u.end), "status": u.status},
        "inputs": [
            {
                "namespace": i.namespace,
                "name": i.name,
                "version": i.version,
                "producedByRunId": i.produced_by_run_id,
            }
            for i in u.inputs
        ],
    }


def provenance(n: p.ProvenanceNode) -> Json:
    r = n.run
    return {
        "namespace": n.namespace,
        "name": n.name,
        "version": n.version,
        "commitId": n.commit_id,
        "createdAt": ts(n.created_at),
        "run": None
        if r is None
        else {
            "id": r.id,
            "state": r.state,
            "startedAt": ts(r.started_at),
            "endedAt": ts(r.ended_at),
            "job": {"namespace": r.job_namespace, "name": r.job_name},
            "jobVersion": r.job_version,
            "programVersion": r.program_version,
        },
        "inputs": [provenance(i) for i in n.inputs],
        "truncated": n.truncated,
        "repeated": n.repeated,
    }
