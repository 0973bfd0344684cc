"""Tags."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from strata.api import views
from strata.api.deps import Eng, Limit, Offset, reading
from strata.api.models import TagIn
from strata.lineage.query import namespaces
from strata.lineage.record import marquez_writes as w
from strata.store.engine import read_tx

router = APIRouter(tags=["Tags"])


@router.get("/tags", response_model=views.Json)
def list_tags(request: Request, limit: Limit = 100, offset: Offset = 0) -> Response:
    with reading(request) as conn:
        page = namespaces.list_tags(conn, limit, offset)
    return views.page("tags", page, views.tag)


@router.put("/tags/{tag:seg}")
def put_tag(eng: Eng, tag: str, body: TagIn | None = None) -> dict[str, Any]:
    w.upsert_tag(eng, tag, body.description if body else None)
    with read_tx(eng) as conn:
        return views.tag(namespaces.get_tag(conn, tag))  # the tag, as Marquez's TagResource answers
