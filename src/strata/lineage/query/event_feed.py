"""Raw lineage events, newest first: all of them, or those touching one namespace."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from strata.store import schema as s

# An event touches a namespace through its job, its DatasetEvent dataset, or any input or
# output. Marquez checks the job and the inputs and outputs only.
_IN_NAMESPACE = {
    "postgresql": """(
        job_namespace = :ns
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'dataset', jsonb_build_object('namespace', CAST(:ns AS text)))
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'inputs', jsonb_build_array(jsonb_build_object('namespace', CAST(:ns AS text))))
        OR CAST(payload AS jsonb) @> jsonb_build_object(
            'outputs', jsonb_build_array(jsonb_build_object('namespace', CAST(:ns AS text)))))""",
    "sqlite": """(
        job_namespace = :ns
        OR json_extract(payload, '$.dataset.namespace') = :ns
        OR EXISTS (SELECT 1 FROM json_each(payload, '$.inputs')
                   WHERE type = 'object' AND json_extract(value, '$.namespace') = :ns)
        OR EXISTS (SELECT 1 FROM json_each(payload, '$.outputs')
                   WHERE type = 'object' AND json_extract(value, '$.namespace') = :ns))""",
}


def list_events(
    conn: Connection, limit: int, offset: int, namespace: str | None = None
) -> list[dict[str, Any]]:
    """Events by event time, newest first (ties by id, so pages do not overlap)."""
    e = s.lineage_events
    query = sa.select(e.c.payload)
    if namespace is not None:
        query = query.where(sa.text(_IN_NAMESPACE[conn.dialect.name]).bindparams(ns=namespace))
    rows = conn.execute(
        query.order_by(e.c.event_time.desc(), e.c.uuid.desc()).limit(limit).offset(offset)
    ).all()
    return [dict(r.payload) for r in rows]
