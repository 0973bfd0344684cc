"""Namespaces and sources."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from strata.api import views
from strata.api.deps import Conn, Eng, Limit, Offset
from strata.api.models import NamespaceIn, SourceIn
from strata.lineage import queries as q
from strata.lineage import writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Namespaces"])


@router.get("/namespaces")
def list_namespaces(conn: Conn, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    page = q.list_namespaces(conn, limit, offset)
    return {"namespaces": [views.namespace(n) for n in page.items], "totalCount": page.total}


@router.get("/namespaces/{namespace:seg}")
def get_namespace(conn: Conn, namespace: str) -> dict[str, Any]:
    return views.namespace(q.get_namespace(conn, namespace))


@router.put("/namespaces/{namespace:seg}")
def put_namespace(eng: Eng, namespace: str, body: NamespaceIn) -> dict[str, Any]:
    w.upsert_namespace(eng, namespace, owner=body.owner_name, description=body.description)
    with read_tx(eng) as conn:
        return views.namespace(q.get_namespace(conn, namespace))


@router.get("/sources", tags=["Sources"])
def list_sources(conn: Conn, limit: Limit = 100, offset: Offset = 0) -> dict[str, Any]:
    page = q.list_sources(conn, limit, offset)
    return {"sources": [views.source(x) for x in page.items], "totalCount": page.total}


@router.get("/sources/{source:seg}", tags=["Sources"])
def get_source(conn: Conn, source: str) -> dict[str, Any]:
    return views.source(q.get_source(conn, source))


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
        return views.source(q.get_source(conn, source))
