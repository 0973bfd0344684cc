"""Marquez's ``v2beta`` search: jobs and datasets as documents, with highlighted matches.

Marquez answers these from OpenSearch documents written per event; here the documents
are built from the store, with the fields Marquez indexes and searches. A document
matches when one of its searched fields contains the query, case-insensitively; each
match is returned with the fields that matched, the query wrapped in ``<em>``. Hits are
the 10 most recently updated matches (OpenSearch's default page; it ranks by score).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.lineage.query import datasets as dataset_reads
from strata.store.owners import events as stored_events
from strata.store.owners.datasets import rows as dataset_rows
from strata.store.owners.datasets import versions as stored_versions
from strata.store.owners.jobs import rows as job_rows
from strata.store.owners.jobs import versions as versions_of
from strata.store.owners.runs import rows as stored_runs

_DATASETS = dataset_rows.relation()
_VERSIONS = stored_versions.relation()

HITS = 10
FRAGMENTS = 5  # per field, as OpenSearch's default number_of_fragments
_BATCH = 200

JOB_FIELDS = (
    "facets.sql.query",
    "facets.sourceCode.sourceCode",
    "facets.sourceCode.language",
    "runFacets.processing_engine.name",
    "run_id",
    "name",
    "namespace",
    "type",
)
DATASET_FIELDS = (
    "run_id",
    "name",
    "namespace",
    "facets.schema.fields.name",
    "facets.schema.fields.type",
    "facets.columnLineage.fields.*.inputFields.name",
    "facets.columnLineage.fields.*.inputFields.namespace",
    "facets.columnLineage.fields.*.inputFields.field",
    "facets.columnLineage.fields.*.transformationDescription",
    "facets.columnLineage.fields.*.transformationType",
)

# The last lineage event type of a run, from its state when it has no event of its own.
_EVENT_OF_STATE = {
    "RUNNING": "START",
    "COMPLETED": "COMPLETE",
    "FAILED": "FAIL",
    "ABORTED": "ABORT",
}


@dataclass(frozen=True)
class Result:
    hits: list[dict[str, Any]]
    highlights: list[dict[str, list[str]]]


def search(conn: Connection, kind: Literal["jobs", "datasets"], query: str) -> Result:
    hits: list[dict[str, Any]] = []
    highlights: list[dict[str, list[str]]] = []
    docs = _job_docs(conn, query) if kind == "jobs" else _dataset_docs(conn, query)
    fields = JOB_FIELDS if kind == "jobs" else DATASET_FIELDS
    for doc in docs:
        marked = highlight(doc, fields, query)
        if marked:
            hits.append(doc)
            highlights.append(marked)
            if len(hits) == HITS:
                break
    _add_event_types(conn, hits)
    return Result(hits, highlights)


def highlight(doc: dict[str, Any], fields: tuple[str, ...], query: str) -> dict[str, list[str]]:
    """field -> the values of ``doc`` containing ``query``, marked; empty if none."""
    pattern = re.compile(re.escape(query), re.IGNORECASE)
    out: dict[str, list[str]] = {}
    for field in fields:
        for path, value in _values(doc, field.split("."), []):
            if pattern.search(value):
                found = out.setdefault(".".join(path), [])
                if len(found) < FRAGMENTS:
                    found.append(pattern.sub(lambda m: f"<em>{m.group(0)}</em>", value))
    return out


def _values(node: Any, path: list[str], at: list[str]) -> Iterator[tuple[list[str], str]]:
    """The text values at ``path`` (``*`` is any key; lists are walked, as in OpenSearch)."""
    if isinstance(node, list):
        for item in node:
            yield from _values(item, path, at)
        return
    if not path:
        if isinstance(node, bool):
            yield at, "true" if node else "false"
        elif isinstance(node, str | int | float):
            yield at, str(node)
        return
    if not isinstance(node, dict):
        return
    key, rest = path[0], path[1:]
    for name in node if key == "*" else [key] if key in node else []:
        yield from _values(node[name], rest, [*at, str(name)])


def _contains(column: sa.ColumnElement[Any], query: str) -> sa.ColumnElement[bool]:
    return sa.func.lower(column).contains(query.lower(), autoescape=True)


def _json_contains(
    conn: Connection, column: sa.ColumnElement[Any], query: str
) -> sa.ColumnElement[bool]:
    # A cheap pre-filter on the stored JSON text, so only candidates are decoded. Strings
    # in it are escaped: look for the escaped query (SQLite stores non-ASCII as \\u escapes).
    needle = json.dumps(query.lower(), ensure_ascii=conn.dialect.name == "sqlite")[1:-1]
    return sa.func.lower(sa.cast(column, sa.Text)).contains(needle, autoescape=True)


def _batches(conn: Connection, select: sa.Select[Any]) -> Iterator[Sequence[sa.Row[Any]]]:
    """Candidates a page at a time: the search stops at the first page that fills it."""
    offset = 0
    while True:
        rows = conn.execute(select.limit(_BATCH).offset(offset)).all()
        if rows:
            yield rows
        if len(rows) < _BATCH:
            return
        offset += _BATCH


def _job_docs(conn: Connection, query: str) -> Iterator[dict[str, Any]]:
    j, jv, r = job_rows.relation(), versions_of.relation(), stored_runs.relation()
    select = (
        sa.select(
            j.c.namespace,
            j.c.name,
            j.c.type,
            j.c.facets,
            r.c.uuid.label("run_uuid"),
            r.c.state.label("run_state"),
            r.c.facets.label("run_facets"),
        )
        .select_from(
            j.outerjoin(jv, jv.c.uuid == j.c.current_version_uuid).outerjoin(
                r, r.c.uuid == jv.c.latest_run_uuid
            )
        )
        .where(
            j.c.is_hidden.is_(False),
            sa.or_(
                _contains(j.c.name, query),
                _contains(j.c.namespace, query),
                _contains(j.c.type, query),
                _contains(r.c.uuid, query),
                _json_contains(conn, j.c.facets, query),
                _json_contains(conn, r.c.facets, query),
            ),
        )
        .order_by(j.c.updated_at.desc(), j.c.uuid)
    )
    for rows in _batches(conn, select):
        for row in rows:
            yield {
                "run_id": row.run_uuid,
                "eventType": _EVENT_OF_STATE.get(row.run_state or ""),
                "name": row.name,
                "type": row.type,
                "namespace": row.namespace,
                "facets": row.facets or {},
                "runFacets": row.run_facets or {},
            }


def _dataset_docs(conn: Connection, query: str) -> Iterator[dict[str, Any]]:
    d, dv = _DATASETS, _VERSIONS
    select = (
        sa.select(d.c.uuid, dv.c.run_uuid)
        .select_from(d.outerjoin(dv, dv.c.uuid == d.c.current_version_uuid))
        .where(
            d.c.is_hidden.is_(False),
            d.c.deleted_at.is_(None),
            sa.or_(
                _contains(d.c.name, query),
                _contains(d.c.namespace, query),
                _contains(dv.c.run_uuid, query),
                _json_contains(conn, d.c.facets, query),
                _json_contains(conn, dv.c.facets, query),
                _json_contains(conn, dv.c.schema_fields, query),
            ),
        )
        .order_by(d.c.updated_at.desc(), d.c.uuid)
    )
    for rows in _batches(conn, select):
        found = dataset_reads.datasets_by_uuid(conn, [r.uuid for r in rows])
        for row in rows:
            ds = found[row.uuid]
            facets = dict(ds.facets)
            if "schema" not in facets and ds.fields:  # lake versions keep columns, not facets
                facets["schema"] = {"fields": [{"name": f.name, "type": f.type} for f in ds.fields]}
            yield {
                "run_id": row.run_uuid,
                "eventType": None,
                "name": ds.name,
                "inputFacets": None,
                "outputFacets": None,
                "namespace": ds.namespace,
                "facets": facets,
            }


def _add_event_types(conn: Connection, hits: list[dict[str, Any]]) -> None:
    """Each hit's ``eventType``: the type of its run's latest event."""
    runs = sorted({h["run_id"] for h in hits if h["run_id"]})
    if not runs:
        return
    latest = stored_events.latest_types(conn, runs)
    for hit in hits:
        if hit["run_id"] in latest:
            hit["eventType"] = latest[hit["run_id"]]
