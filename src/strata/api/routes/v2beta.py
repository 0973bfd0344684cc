"""Marquez's ``/api/v2beta/search``: jobs and datasets as documents with highlights."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from strata.api.deps import Conn
from strata.api.inputs import NOT_BLANK
from strata.errors import InvalidArgument
from strata.lineage.query import doc_search

router = APIRouter(prefix="/api/v2beta/search", tags=["Search"])

Q = Annotated[
    str,
    Query(
        min_length=1,
        max_length=1024,
        description="text to look for: not only white space, no NUL character",
        json_schema_extra={"pattern": NOT_BLANK},
    ),
]


def _search(conn: Conn, kind: Literal["jobs", "datasets"], q: str) -> dict[str, Any]:
    if not q.strip():
        raise InvalidArgument("q must not be blank", field="q")
    result = doc_search.search(conn, kind, q.strip())
    return {"hits": result.hits, "highlights": result.highlights}


@router.get("/jobs")
def search_jobs(conn: Conn, q: Q) -> dict[str, Any]:
    """Jobs whose name, namespace, type, latest run id, SQL, source code or processing
    engine contain ``q``."""
    return _search(conn, "jobs", q)


@router.get("/datasets")
def search_datasets(conn: Conn, q: Q) -> dict[str, Any]:
    """Datasets whose name, namespace, producing run id, schema or column lineage contain
    ``q``."""
    return _search(conn, "datasets", q)
