"""Namespaces and sources."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from strata.api import views
from strata.api.deps import Eng, Limit, Offset, reading
from strata.api.models import NamespaceIn, SourceIn
from strata.lineage.query import namespaces as namespace_reads
from strata.lineage.record import marquez_writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Namespaces"])


@router.get("/namespaces", response_model=views.Json)
def list_namespaces(request: Request, limit: Limit = 100, offset: Offset = 0) -> Response:
    with reading(request) as conn:
        page = namespace_reads.list_namespaces(conn, limit, offset)
    return views.page("namespaces", page, views.namespace)


@router.get("/namespaces/{namespace:seg}", response_model=views.Json)
def get_namespace(request: Request, namespace: str) -> Response:
    with reading(request) as conn:
        found = namespace_reads.get_namespace(conn, namespace)
    return views.json_response(views.namespace(found))


@router.put("/namespaces/{namespace:seg}")
def put_namespace(eng: Eng, namespace: str, body: NamespaceIn) -> dict[str, Any]:
    w.upsert_namespace(eng, namespace, owner=body.owner_name, description=body.description)
    with read_tx(eng) as conn:
        return views.namespace(namespace_reads.get_namespace(conn, namespace))


@router.get("/sources", tags=["Sources"], response_model=views.Json)
def list_sources(request: Request, limit: Limit = 100, offset: Offset = 0) -> Response:
    with reading(request) as conn:
        page = namespace_reads.list_sources(conn, limit, offset)
    return views.page("sources", page, views.source)


@router.get("/sources/{source:seg}", tags=["Sources"], response_model=views.Json)
def get_source(request: Request, source: str) -> Response:
    with reading(request) as conn:
        found = namespace_reads.get_source(conn, source)
    return views.json_response(views.source(found))


@router.put("/sources/{source:seg}", tags=["Sources"])
def put_source(eng: Eng, source: str, body: SourceIn) -> dict[str, Any]:
    w.upsert_source(
        eng,
        source,
        type=body.type,
        connection_url=body.connection_url,
        description=body.description,
    )
    with read_tx(eng) as conn:
        return views.source(namespace_reads.get_source(conn, source))
