"""The jobs owner's contract, on every backend: a job's other name, set by the fold when
a child job's events name it by its own name, and found again by that name."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.jobs import aliases as jobs

AT = datetime(2026, 1, 1, tzinfo=UTC).isoformat()
PARENT_RUN = "01890000-0000-7000-8000-000000000001"


def _event(run: str, name: str, parent: str | None = None) -> dict[str, Any]:
    facets = {}
    if parent is not None:
        facets["parent"] = {
            "_producer": "https://example.com/tests",
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/ParentRunFacet.json",
            "run": {"runId": PARENT_RUN},
            "job": {"namespace": "ns", "name": parent},
        }
    return {
        "eventType": "START",
        "eventTime": AT,
        "run": {"runId": run, "facets": facets},
        "job": {"namespace": "ns", "name": name},
        "producer": "https://example.com/tests",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _named(engine: sa.Engine, namespace: str, name: str) -> list[str]:
    j = s.jobs
    with engine.connect() as conn:
        query = sa.select(j.c.name).where(j.c.uuid.in_(jobs.named(namespace, name)))
        return list(conn.execute(query).scalars())


def test_a_child_job_keeps_the_name_its_events_use(engine: sa.Engine) -> None:
    record_event(engine, _event(PARENT_RUN, "dag"))
    record_event(engine, _event("01890000-0000-7000-8000-000000000002", "task", parent="dag"))
    assert _named(engine, "ns", "task") == ["dag.task"]
    assert _named(engine, "ns", "dag.task") == []  # its own name is no alias
    assert _named(engine, "other", "task") == []


def test_an_alias_is_replaced_and_dropped(engine: sa.Engine) -> None:
    record_event(engine, _event(PARENT_RUN, "solo"))
    with engine.connect() as conn:
        job = str(conn.execute(sa.select(s.jobs.c.uuid)).scalar_one())
    with engine.begin() as conn:
        jobs.set_alias(conn, job, "ns", "old")
        jobs.set_alias(conn, job, "ns", "older")
    assert (_named(engine, "ns", "old"), _named(engine, "ns", "older")) == ([], ["solo"])
    with engine.begin() as conn:
        jobs.set_alias(conn, job, "ns", None)
    assert _named(engine, "ns", "older") == []
