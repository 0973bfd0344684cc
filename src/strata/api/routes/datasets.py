"""Datasets, their versions and tags."""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import APIRouter, Request, Response

from strata.api import views
from strata.api.deps import Eng, LakeRoot, Limit, Offset, reading
from strata.api.models import DatasetIn
from strata.errors import NotFound
from strata.lineage.query import datasets as dataset_reads
from strata.lineage.query import namespaces as namespace_reads
from strata.lineage.record import marquez_writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Datasets"])
DS = "/namespaces/{namespace:seg}/datasets/{dataset:seg}"


@router.get("/namespaces/{namespace:seg}/datasets", response_model=views.Json)
def list_datasets(
    request: Request, lake: LakeRoot, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> Response:
    with reading(request) as conn:
        page = dataset_reads.list_datasets(conn, namespace, limit, offset)
    return views.page("datasets", page, partial(views.dataset, lake=lake))


@router.get(DS, response_model=views.Json)
def get_dataset(request: Request, lake: LakeRoot, namespace: str, dataset: str) -> Response:
    with reading(request) as conn:
        found = dataset_reads.get_dataset(conn, namespace, dataset)
    return views.json_response(views.dataset(found, lake))


@router.put(DS)
def put_dataset(
    eng: Eng, lake: LakeRoot, namespace: str, dataset: str, body: DatasetIn
) -> dict[str, Any]:
    with read_tx(eng) as conn:
        namespace_reads.get_source(conn, body.source_name)  # 404 names the missing source
    fields = [
        {k: v for k, v in f.model_dump().items() if k != "tags" and v is not None}
        for f in body.fields
    ]
    w.upsert_dataset(
        eng,
        namespace,
        dataset,
        type=body.type,
        physical_name=body.physical_name,
        source_name=body.source_name,
        fields=fields,
        description=body.description,
        run_id=str(body.run_id) if body.run_id is not None else None,
        schema_location=body.schema_location,
    )
    for tag in body.tags:
        w.tag_dataset(eng, namespace, dataset, tag)
    for f in body.fields:
        for tag in f.tags:
            w.tag_dataset(eng, namespace, dataset, tag, f.name)
    with read_tx(eng) as conn:
        return views.dataset(dataset_reads.get_dataset(conn, namespace, dataset), lake)


@router.get(DS + "/versions", response_model=views.Json)
def list_versions(
    request: Request,
    lake: LakeRoot,
    namespace: str,
    dataset: str,
    limit: Limit = 100,
    offset: Offset = 0,
) -> Response:
    with reading(request) as conn:
        page = dataset_reads.list_dataset_versions(conn, namespace, dataset, limit, offset)
    return views.page("versions", page, partial(views.dataset_version, lake=lake))


@router.get(DS + "/versions/{version:seg}", response_model=views.Json)
def get_version(
    request: Request, lake: LakeRoot, namespace: str, dataset: str, version: str
) -> Response:
    with reading(request) as conn:
        found = dataset_reads.get_dataset_version(conn, namespace, dataset, version)
    return views.json_response(views.dataset_version(found, lake))


@router.post(DS + "/tags/{tag:seg}")
def tag_dataset(eng: Eng, lake: LakeRoot, namespace: str, dataset: str, tag: str) -> dict[str, Any]:
    w.tag_dataset(eng, namespace, dataset, tag)
    with read_tx(eng) as conn:
        return views.dataset(dataset_reads.get_dataset(conn, namespace, dataset), lake)


@router.delete(DS + "/tags/{tag:seg}")
def untag_dataset(
    eng: Eng, lake: LakeRoot, namespace: str, dataset: str, tag: str
) -> dict[str, Any]:
    w.untag_dataset(eng, namespace, dataset, tag)
    with read_tx(eng) as conn:
        return views.dataset(dataset_reads.get_dataset(conn, namespace, dataset), lake)


@router.post(DS + "/fields/{field:seg}/tags/{tag:seg}")
def tag_field(
    eng: Eng, lake: LakeRoot, namespace: str, dataset: str, field: str, tag: str
) -> dict[str, Any]:
    with read_tx(eng) as conn:
        fields = [f.name for f in dataset_reads.get_dataset(conn, namespace, dataset).fields]
    if field not in fields:
        raise NotFound(
            f"field {field!r} not found in dataset {dataset!r} (fields: {', '.join(fields)}); "
            "tag one of its current version's fields",
            field=field,
            dataset=dataset,
        )
    w.tag_dataset(eng, namespace, dataset, tag, field)
    with read_tx(eng) as conn:
        return views.dataset(dataset_reads.get_dataset(conn, namespace, dataset), lake)


@router.delete(DS + "/fields/{field:seg}/tags/{tag:seg}")
def untag_field(
    eng: Eng, lake: LakeRoot, namespace: str, dataset: str, field: str, tag: str
) -> dict[str, Any]:
    w.untag_dataset(eng, namespace, dataset, tag, field)
    with read_tx(eng) as conn:
        return views.dataset(dataset_reads.get_dataset(conn, namespace, dataset), lake)
