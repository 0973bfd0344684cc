"""The contract of the jobs owner's rows (``jobs``), on every backend: a job is created
once and only widened, its merge state reads back as written, the naming reads find the
jobs the fold's rename rules ask about, and hiding takes exactly what it names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from strata import ids
from strata.lineage.record.apply import record_event
from strata.store.owners import namespaces
from strata.store.owners.jobs import rows

AT = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCER = "https://example.com/tests"


def _new(namespace: str, name: str, lo: datetime, hi: datetime) -> dict[str, Any]:
    return {
        "uuid": ids.job_uuid(namespace, name),
        "namespace": namespace,
        "simple_name": name,
        "name": name,
        "parent_key": "",
        "facets": {},
        "fold_state": {"raw": name, "facets": {}, "parent": None, "static": {}},
        "created_at": lo,
        "updated_at": hi,
    }


def _times(conn: sa.Connection, uuid: str) -> tuple[datetime, datetime]:
    j = rows.relation("j")
    q = sa.select(j.c.created_at, j.c.updated_at).where(j.c.uuid == uuid)
    found = conn.execute(q).one()
    return found.created_at, found.updated_at


def test_touch_creates_once_widens_and_reads_back_the_merge_state(engine: sa.Engine) -> None:
    a, b = _new("ns", "a", AT, AT), _new("ns", "b", AT, AT + timedelta(hours=1))
    with engine.begin() as conn:
        namespaces.ensure(conn, "ns", AT)
        first = rows.touch(conn, [a, b])
        assert set(first) == {a["uuid"], b["uuid"]}
        assert (
            first[a["uuid"]].fold_state["raw"] == "a" and first[a["uuid"]].current_version is None
        )
        state = {**first[a["uuid"]].fold_state, "facets": {"doc": ["x"]}}
        rows.write_states(conn, [rows.JobRow(a["uuid"], {"doc": {"v": 1}}, state)])
        # Touched again, earlier and later: only widened, the merge state kept.
        again = rows.touch(
            conn, [_new("ns", "a", AT - timedelta(hours=1), AT + timedelta(hours=2))]
        )
        assert again[a["uuid"]].facets == {"doc": {"v": 1}}
        assert rows.touch(conn, []) == {}
        rows.touch(conn, [_new("ns", "a", AT, AT)])
    with engine.connect() as conn:
        assert _times(conn, a["uuid"]) == (AT - timedelta(hours=1), AT + timedelta(hours=2))
        assert rows.state(conn, a["uuid"]) == ({"doc": {"v": 1}}, state)
    with engine.begin() as conn:
        rows.write_fold_state(conn, a["uuid"], {**state, "static": {"f" * 64: ["t"]}})
    with engine.connect() as conn:
        assert rows.state(conn, a["uuid"])[1]["static"] == {"f" * 64: ["t"]}


def _child_event(run: str, name: str, parent: str) -> dict[str, Any]:
    facet = {"run": {"runId": ids.new_id()}, "job": {"namespace": "ns", "name": parent}}
    return {
        "eventType": "COMPLETE",
        "eventTime": AT.isoformat(),
        "run": {
            "runId": run,
            "facets": {"parent": {"_producer": PRODUCER, "_schemaURL": PRODUCER, **facet}},
        },
        "job": {"namespace": "ns", "name": name},
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def test_the_naming_reads_see_what_the_fold_named(engine: sa.Engine) -> None:
    record_event(engine, _child_event(ids.new_id(), "dag.task", "dag"))
    dag, task = ids.job_uuid("ns", "dag"), ids.job_uuid("ns", "dag.task")
    with engine.connect() as conn:
        assert rows.parent_of(conn, task) == dag and rows.parent_of(conn, dag) is None
        assert rows.children(conn, dag) == [task] and rows.children(conn, task) == []
        assert rows.name_and_raw(conn, task) == ("dag.task", "dag.task")
        assert rows.raw_name(rows.row(conn, task)) == "dag.task"
        # The child holds its simple name under its parent; nobody else does.
        held = rows.holder(conn, "ns", "task", dag, ids.job_uuid("ns", "other"))
        assert held == rows.Holder(task, "dag.task")
        assert rows.holder(conn, "ns", "task", dag, task) is None
        assert rows.yielded(conn, "ns", dag, ids.job_uuid("ns", "other")) == []
    with engine.begin() as conn:
        rows.free_name(conn, task)
    with engine.connect() as conn:
        assert rows.holder(conn, "ns", "task", dag, ids.job_uuid("ns", "other")) is None
        assert rows.yielded(conn, "ns", dag, ids.job_uuid("ns", "other")) == [task]
    with engine.begin() as conn:
        naming = rows.Naming("task", "dag.task", dag, dag, "JOB", "about", None)
        rows.write_names(conn, task, naming)
    with engine.connect() as conn:
        j = rows.relation("j")
        q = sa.select(j.c.parent_key, j.c.type, j.c.description).where(j.c.uuid == task)
        assert tuple(conn.execute(q).one()) == (dag, "JOB", "about")


def test_current_versions_and_hiding_take_exactly_what_they_name(engine: sa.Engine) -> None:
    record_event(engine, _child_event(ids.new_id(), "dag.task", "dag"))
    lone = _child_event(ids.new_id(), "solo", "dag")
    del lone["run"]["facets"]  # a job of another namespace, with no parent
    record_event(engine, {**lone, "job": {"namespace": "other", "name": "solo"}})
    dag, task = ids.job_uuid("ns", "dag"), ids.job_uuid("ns", "dag.task")
    solo = ids.job_uuid("other", "solo")
    j = rows.relation("j")
    with engine.begin() as conn:
        rows.set_current_versions(conn, [{"uuid": dag, "current_version_uuid": None}])
        rows.hide(conn, task)
    with engine.connect() as conn:
        hidden = dict(conn.execute(sa.select(j.c.uuid, j.c.is_hidden)).all())
        assert hidden == {dag: False, task: True, solo: False}
        assert (
            conn.execute(sa.select(j.c.current_version_uuid).where(j.c.uuid == dag)).scalar()
            is None
        )
    with engine.begin() as conn:
        rows.hide_namespace(conn, "ns")
    with engine.connect() as conn:
        hidden = dict(conn.execute(sa.select(j.c.uuid, j.c.is_hidden)).all())
        assert hidden == {dag: True, task: True, solo: False}
    with pytest.raises(AttributeError):
        j.update()  # type: ignore[attr-defined]
