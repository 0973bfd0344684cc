"""The contract of the runs owner's run rows (``runs``), on every backend: the fold's
rows as it writes them, a parent known only from its children made the same whatever
order they arrive in, the typed reads of runs alone, and a read-only relation for
statements that join runs to another family."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from strata import ids
from strata.lineage.record.apply import record_event
from strata.lineage.record.facets import PARTITION_FACET
from strata.store import schema as s
from strata.store.owners.runs import rows

AT = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCER = "https://example.com/tests"
JOB = ids.job_uuid("ns", "daily")


def _run(n: int) -> str:
    return f"01890000-0000-7000-8000-{n:012d}"


def _event(kind: str, run: str, minutes: int, **extra: Any) -> dict[str, Any]:
    facets = extra.pop("facets", {})
    return {
        "eventType": kind,
        "eventTime": (AT + timedelta(minutes=minutes)).isoformat(),
        "run": {"runId": run, "facets": facets},
        "job": {"namespace": extra.pop("namespace", "ns"), "name": extra.pop("job", "daily")},
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        **extra,
    }


def _partition(key: dict[str, str]) -> dict[str, Any]:
    return {PARTITION_FACET: {"_producer": PRODUCER, "_schemaURL": PRODUCER, "key": key}}


def _seed_partitions(engine: sa.Engine) -> None:
    """Runs of the ``daily`` job: region EU twice (the later failed), US once, and one
    run of no partition."""
    record_event(engine, _event("COMPLETE", _run(1), 1, facets=_partition({"region": "EU"})))
    record_event(engine, _event("COMPLETE", _run(2), 2, facets=_partition({"region": "US"})))
    record_event(engine, _event("FAIL", _run(3), 3, facets=_partition({"region": "EU"})))
    record_event(engine, _event("COMPLETE", _run(4), 4))


def test_the_fold_writes_a_runs_row_and_the_reads_of_runs_alone_see_it(
    engine: sa.Engine,
) -> None:
    _seed_partitions(engine)
    with engine.connect() as conn:
        found = rows.details(conn, [_run(3), _run(4), _run(99)])
        assert {u: d.state for u, d in found.items()} == {_run(3): "FAILED", _run(4): "COMPLETED"}
        assert found[_run(3)].facets[PARTITION_FACET]["key"] == {"region": "EU"}
        assert rows.newest(conn, 2) == [_run(4), _run(3)]
        assert rows.newest(conn, 9, job_uuid=JOB) == [_run(n) for n in (4, 3, 2, 1)]
        assert rows.newest(conn, 9, job_uuid=ids.job_uuid("ns", "other")) == []
        assert rows.place_in_job(conn, JOB, AT + timedelta(minutes=3), _run(3)) == 3
        # Partitions: a page by key, its total, the newest key, the latest run of each.
        assert rows.partition_page(conn, JOB, {"region": ["EU"]}, 10, 0) == (
            [_run(3), _run(1)],
            2,
        )
        assert rows.partition_page(conn, JOB, {"region": ["EU", "US"]}, 1, 1) == ([_run(2)], 3)
        assert rows.partition_page(conn, JOB, {"region": ["E"]}, 10, 0) == ([], 0)
        assert rows.newest_partition_key(conn, JOB) == "region=EU"
        latest = rows.latest_partition_runs(conn, JOB)
        assert [(x.partition, x.run_uuid, x.state) for x in latest] == [
            ("region=EU", _run(3), "FAILED"),
            ("region=US", _run(2), "COMPLETED"),
        ]


def test_children_are_counted_by_state_and_running_ones_are_seen(engine: sa.Engine) -> None:
    facet = {"run": {"runId": _run(10)}, "job": {"namespace": "ns", "name": "dag"}}
    parent = {"parent": {"_producer": PRODUCER, "_schemaURL": PRODUCER, **facet}}
    record_event(engine, _event("START", _run(11), 1, facets=parent, job="task"))
    record_event(engine, _event("COMPLETE", _run(12), 2, facets=parent, job="task"))
    with engine.connect() as conn:
        assert rows.children_by_state(conn, _run(10)) == {"RUNNING": 1, "COMPLETED": 1}
        assert rows.has_running_children(conn, _run(10))
        assert not rows.has_running_children(conn, _run(11))
    record_event(engine, _event("COMPLETE", _run(11), 3, facets=parent, job="task"))
    with engine.connect() as conn:
        assert rows.children_by_state(conn, _run(10)) == {"COMPLETED": 2}
        assert not rows.has_running_children(conn, _run(10))


PARENT_JOBS = [ids.job_uuid("a", "dag"), ids.job_uuid("b", "dag")]
CHILDREN = [  # (minutes, child event type, the parent's job)
    (5, "START", PARENT_JOBS[1]),
    (2, "COMPLETE", PARENT_JOBS[0]),
    (2, "FAIL", PARENT_JOBS[1]),
]


def _placeholder_after(engine: sa.Engine, order: tuple[int, ...]) -> tuple[Any, ...]:
    parent = _run(20)
    for i in order:
        minutes, kind, job = CHILDREN[i]
        at = AT + timedelta(minutes=minutes)
        state = {"START": "RUNNING", "COMPLETE": "COMPLETED", "FAIL": "FAILED"}[kind]
        done = state != "RUNNING"
        said = rows.Placeholder(state, None if done else at, at if done else None, at)
        with engine.begin() as conn:
            if not rows.add_placeholder(conn, parent, job, at, said):
                rows.widen_placeholder(conn, parent, job, at, said)
    r = s.runs
    with engine.connect() as conn:
        cols = (r.c.job_uuid, r.c.state, r.c.created_at, r.c.updated_at, r.c.ended_at)
        return tuple(conn.execute(sa.select(*cols).where(r.c.uuid == parent)).one())


def test_a_placeholder_parent_is_the_same_whatever_order_its_children_arrive_in(
    engine: sa.Engine,
) -> None:
    for n, ns in enumerate(("a", "b")):  # the parents' jobs, made by the fold
        record_event(engine, _event("COMPLETE", _run(30 + n), 0, namespace=ns, job="dag"))
    seen = set()
    for order in itertools.permutations(range(len(CHILDREN))):
        with engine.begin() as conn:
            rows.delete(conn, [_run(20)])
        seen.add(_placeholder_after(engine, order))
    # The earliest child's state (at a tie, the state sorting first), the smaller job's
    # uuid, and times that cover every child.
    ((job, state, created, updated, ended),) = seen
    assert job == min(PARENT_JOBS)
    assert state == "COMPLETED"
    assert created == AT + timedelta(minutes=2) and updated == AT + timedelta(minutes=5)
    assert ended == AT + timedelta(minutes=2)


def test_upsert_writes_whole_rows_and_delete_says_how_many_went(engine: sa.Engine) -> None:
    _seed_partitions(engine)
    with engine.connect() as conn:
        stored = conn.execute(sa.select(s.runs).where(s.runs.c.uuid == _run(4))).one()
    row = rows.RunRow(**{f: getattr(stored, f) for f in rows.RunRow._fields})
    with engine.begin() as conn:
        rows.upsert(conn, [row._replace(state="ABORTED", facets={"x": {"y": 1}})])
    with engine.connect() as conn:
        detail = rows.details(conn, [_run(4)])[_run(4)]
        assert (detail.state, detail.facets) == ("ABORTED", {"x": {"y": 1}})
        assert rows.latest_versioned(conn, [JOB]) == {
            JOB: (AT + timedelta(minutes=4), str(stored.job_version_uuid))
        }
    with engine.begin() as conn:
        for table in (s.run_inputs, s.run_states, s.run_input_facets):
            conn.execute(table.delete())
        assert rows.delete(conn, [_run(4), _run(99)]) == 1
    with engine.connect() as conn:
        assert set(rows.details(conn, [_run(n) for n in range(1, 5)])) == {
            _run(1),
            _run(2),
            _run(3),
        }


def test_the_relation_reads_but_cannot_write(engine: sa.Engine) -> None:
    _seed_partitions(engine)
    r, j = rows.relation("r"), s.jobs
    with engine.connect() as conn:
        names = conn.execute(
            sa.select(j.c.name, sa.func.count())
            .join(r, r.c.job_uuid == j.c.uuid)
            .group_by(j.c.name)
        ).all()
    assert names == [("daily", 4)]
    with pytest.raises(AttributeError):
        r.insert()  # type: ignore[attr-defined]
