"""Datasets, their versions and tags."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from strata.api import views
from strata.api.deps import Conn, Eng, Limit, Offset
from strata.api.models import DatasetIn
from strata.lineage import queries as q
from strata.lineage import writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Datasets"])
DS = "/namespaces/{namespace:seg}/datasets/{dataset:seg}"


@router.get("/namespaces/{namespace:seg}/datasets")
def list_datasets(
    conn: Conn, namespace: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    page = q.list_datasets(conn, namespace, limit, offset)
    return {"datasets": [views.dataset(d) for d in page.items], "totalCount": page.total}


@router.get(DS)
def get_dataset(conn: Conn, namespace: str, dataset: str) -> dict[str, Any]:
    return views.dataset(q.get_dataset(conn, namespace, dataset))


@router.put(DS)
def put_dataset(eng: Eng, namespace: str, dataset: str, body: DatasetIn) -> dict[str, Any]:
    with read_tx(eng) as conn:
        q.get_source(conn, body.source_name)  # 404 names the missing source
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
    )
    for tag in body.tags:
        w.tag_dataset(eng, namespace, dataset, tag)
    for f in body.fields:
        for tag in f.tags:
            w.tag_dataset(eng, namespace, dataset, tag, f.name)
    with read_tx(eng) as conn:
        return views.dataset(q.get_dataset(conn, namespace, dataset))


@router.get(DS + "/versions")
def list_versions(
    conn: Conn, namespace: str, dataset: str, limit: Limit = 100, offset: Offset = 0
) -> dict[str, Any]:
    page = q.list_dataset_versions(conn, namespace, dataset, limit, offset)
    return {"versions": [views.dataset_version(v) for v in page.items], "totalCount": page.total}


@router.get(DS + "/versions/{version:seg}")
def get_version(conn: Conn, namespace: str, dataset: str, version: str) -> dict[str, Any]:
    return views.dataset_version(q.get_dataset_version(conn, namespace, dataset, version))


@router.post(DS + "/tags/{tag:seg}")
def tag_dataset(eng: Eng, namespace: str, dataset: str, tag: str) -> dict[str, Any]:
    w.tag_dataset(eng, namespace, dataset, tag)
    with read_tx(eng) as conn:
        return views.dataset(q.get_dataset(conn, namespace, dataset))


@router.delete(DS + "/tags/{tag:seg}")
def untag_dataset(eng: Eng, namespace: str, dataset: str, tag: str) -> dict[str, Any]:
    w.untag_dataset(eng, namespace, dataset, tag)
    with read_tx(eng) as conn:
        return views.dataset(q.get_dataset(conn, namespace, dataset))


@router.post(DS + "/fields/{field:seg}/tags/{tag:seg}")
def tag_field(eng: Eng, namespace: str, dataset: str, field: str, tag: str) -> dict[str, Any]:
    w.tag_dataset(eng, namespace, dataset, tag, field)
    with read_tx(eng) as conn:
        return views.dataset(q.get_dataset(conn, namespace, dataset))


@router.delete(DS + "/fields/{field:seg}/tags/{tag:seg}")
def untag_field(eng: Eng, namespace: str, dataset: str, field: str, tag: str) -> dict[str, Any]:
    w.untag_dataset(eng, namespace, dataset, tag, field)
    with read_tx(eng) as conn:
        return views.dataset(q.get_dataset(conn, namespace, dataset))
