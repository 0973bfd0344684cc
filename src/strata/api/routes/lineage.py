"""OpenLineage ingest, raw events, and the lineage graphs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Query, Request, Response

from strata.api import views
from strata.api.body import read_json
from strata.api.contract import Responses, errors
from strata.api.deps import Conn, Depth, Eng, LakeRoot, Limit, Offset, QueryTime, time_param
from strata.api.inputs import aware_time
from strata.errors import InvalidEvent, StrataError
from strata.lineage.query import column_lineage as cl
from strata.lineage.query import graph as g
from strata.lineage.query import search
from strata.lineage.record.writer import GroupWriter, Results
from strata.store.engine import read_tx

router = APIRouter(tags=["Lineage"])

_EVENT = {"$ref": "#/components/schemas/LineageEvent"}  # see strata.api.event_schema
_EVENT_BODY = {
    "requestBody": {"required": True, "content": {"application/json": {"schema": _EVENT}}}
}
_BATCH_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "array",
                    # Not only events: the batch answers each item, reporting what is none.
                    "items": {"description": "an OpenLineage event (see LineageEvent)"},
                }
            }
        },
    }
}


def _writer(request: Request) -> GroupWriter:
    """The app's group-commit writer (see :mod:`strata.lineage.record.writer`)."""
    writer: GroupWriter = request.app.state.lineage_writer
    return writer


async def _store(request: Request, payloads: list[Any]) -> Results:
    return await _writer(request).store(payloads)


async def accept_event(writer: GroupWriter, payload: Any) -> None:
    """Queue one event with ``writer``; raises why it was refused."""
    if not isinstance(payload, dict):
        raise InvalidEvent(
            f"a lineage event must be a JSON object, got {type(payload).__name__}", path="$"
        )
    [result] = await writer.store([payload])
    if isinstance(result, StrataError):
        raise result


# Bodies are read by hand (gzip, size limits): 413 and 415 come from there.
_BODY_ERRORS = errors(413, 415)


_STORED: Responses = {201: {"description": "stored: it will be part of the model", "content": {}}}


@router.post(
    "/lineage",
    status_code=201,
    openapi_extra=_EVENT_BODY,
    response_class=Response,
    responses={**_STORED, **_BODY_ERRORS},
)
async def post_lineage(request: Request) -> Response:
    """Store one OpenLineage event (201). The app answers this route itself, ahead of the
    router (:mod:`strata.api.direct`); this is its description and a fallback."""
    await accept_event(_writer(request), await read_json(request))
    return Response(status_code=201)


# Events one batch may hold (OpenLineage's batching clients send 100 at a time).
MAX_BATCH = 10_000


@router.post("/lineage/batch", openapi_extra=_BATCH_BODY, responses=_BODY_ERRORS)
async def post_lineage_batch(request: Request) -> Response:
    payload = await read_json(request)
    if not isinstance(payload, list):
        raise InvalidEvent(
            f"a batch must be a JSON array of events, got {type(payload).__name__}", path="$"
        )
    if len(payload) > MAX_BATCH:
        raise InvalidEvent(
            f"a batch holds {len(payload)} events, more than the {MAX_BATCH} one request "
            "may send; send them in several batches",
            path="$",
        )
    results = await _store(request, payload)
    failed = []
    per_event = []
    for i, r in enumerate(results):
        if isinstance(r, StrataError):
            failed.append({"index": i, "reason": r.message, "retriable": r.http_status >= 500})
            per_event.append({"index": i, "status": r.http_status, "error": r.to_dict()})
        else:
            per_event.append({"index": i, "status": 201})
    body = {
        "status": "partial_success" if failed else "success",
        "summary": {
            "received": len(results),
            "successful": len(results) - len(failed),
            "failed": len(failed),
            "retriable": sum(1 for f in failed if f["retriable"]),
            "non_retriable": sum(1 for f in failed if not f["retriable"]),
        },
        "failed_events": failed,
        "results": per_event,
    }
    return Response(orjson.dumps(body), media_type="application/json")


@router.get("/events/lineage")
def list_events(
    conn: Conn,
    before: Annotated[QueryTime, time_param("events before this time")] = None,
    after: Annotated[QueryTime, time_param("events after this time")] = None,
    sort_direction: Annotated[
        Literal["asc", "desc", "ASC", "DESC"], Query(alias="sortDirection")
    ] = "desc",
    limit: Limit = 100,
    offset: Offset = 0,
) -> dict[str, Any]:
    page = search.list_events(
        conn,
        aware_time(before, "before"),
        aware_time(after, "after"),
        sort_direction.lower() == "asc",
        limit,
        offset,
    )
    return {"events": page.items, "totalCount": page.total}


NodeId = Annotated[
    str,
    Query(
        alias="nodeId",
        min_length=1,
        max_length=4096,
        description="dataset:<namespace>:<name>, job:<namespace>:<name> "
        "or datasetField:<namespace>:<dataset>:<field>",
        json_schema_extra={"pattern": "^(dataset|job|datasetField):[^\\u0000]+$"},
    ),
]
_NODE_ERRORS = errors(404)  # no such node


@router.get("/lineage", response_model=views.Json, responses=_NODE_ERRORS)
def get_lineage(
    eng: Eng,
    lake: LakeRoot,
    node_id: NodeId,
    depth: Depth = 20,
    as_of: Annotated[QueryTime, time_param("the graph as it was then", "asOf")] = None,
) -> Response:
    at = aware_time(as_of, "asOf")
    # A transaction rather than an autocommit read: the walk scopes planner settings to it.
    with read_tx(eng) as conn:
        nodes = g.lineage_graph(conn, node_id, depth, at)
    return views.json_response({"graph": [views.graph_node(n, lake) for n in nodes]})


@router.get("/column-lineage", responses=_NODE_ERRORS)
def get_column_lineage(
    conn: Conn,
    node_id: NodeId,
    depth: Depth = 20,
    with_downstream: Annotated[bool, Query(alias="withDownstream")] = False,
) -> dict[str, Any]:
    nodes = cl.column_lineage(conn, node_id, depth, with_downstream)
    return {"graph": [views.field_node(n) for n in nodes]}
