"""The contract of the runs owner's bindings (``run_inputs``) and run counts, on every
backend: the fold binds a reader to the version it read, the joins offered compose
into one statement from either side, rebinding and dropping keep exactly what they say,
and the readers of a dataset are found by time and by label."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.runs import counts, inputs

AT = datetime(2026, 1, 1, tzinfo=UTC)
WRITER = "01890000-0000-7000-8000-000000000001"
READER = "01890000-0000-7000-8000-0000000000a1"
IDLE = "01890000-0000-7000-8000-0000000000b1"
PRODUCER = "https://example.com/tests"


def _event(kind: str, run: str, minutes: int, job: str, **io: Any) -> dict[str, Any]:
    return {
        "eventType": kind,
        "eventTime": (AT + timedelta(minutes=minutes)).isoformat(),
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": job},
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        **io,
    }


def _seed(engine: sa.Engine) -> tuple[str, str]:
    """A writer that wrote ``t``, a reader that read it, and a run that read nothing;
    the version written and its dataset's uuid."""
    out = [{"namespace": "ns", "name": "t"}]
    record_event(engine, _event("COMPLETE", WRITER, 1, "writer", outputs=out))
    record_event(engine, _event("COMPLETE", READER, 5, "reader", inputs=out))
    record_event(engine, _event("COMPLETE", IDLE, 6, "reader"))
    with engine.connect() as conn:
        dv = s.dataset_versions
        row = conn.execute(sa.select(dv.c.uuid, dv.c.dataset_uuid)).one()
    return str(row.uuid), str(row.dataset_uuid)


def _bindings(conn: sa.Connection) -> set[tuple[str, str]]:
    dv = s.dataset_versions
    q, read = inputs.join_read(sa.select(dv.c.uuid).select_from(dv), version=dv.c.uuid)
    return {(str(r), str(v)) for v, r in conn.execute(q.add_columns(read.run))}


def test_the_fold_binds_a_reader_and_the_joins_compose_from_either_side(
    engine: sa.Engine,
) -> None:
    version, dataset = _seed(engine)
    dv, d = s.dataset_versions, s.datasets
    with engine.connect() as conn:
        assert _bindings(conn) == {(READER, version)}
        # From the run's side: what a run read, with the dataset's name, in one statement.
        runs = sa.select(sa.literal(READER).label("run")).subquery()
        q, read = inputs.join_read(sa.select(runs.c.run).select_from(runs), run=runs.c.run)
        q = q.join(dv, dv.c.uuid == read.version).join(d, d.c.uuid == dv.c.dataset_uuid)
        assert conn.execute(q.add_columns(d.c.name)).all() == [(READER, "t")]
        # Outer: a version no run read keeps its row, with no reader.
        q, read = inputs.join_read(
            sa.select(dv.c.uuid).select_from(dv), version=dv.c.uuid, outer=True
        )
        rows = conn.execute(q.add_columns(read.run)).all()
        assert [(str(v), r) for v, r in rows] == [(version, READER)]
        assert inputs.readers_among(conn, [READER, IDLE, WRITER]) == {READER}
        assert inputs.read_versions(conn, [version, "nope"]) == {version}
        assert inputs.readers_since(conn, AT, [dataset]) == [
            (READER, AT + timedelta(minutes=5), dataset)
        ]
        assert inputs.readers_since(conn, AT + timedelta(minutes=6), [dataset]) == []
        # By label: the version's own uuid is a label it carries.
        assert inputs.readers_by_label(conn, [(7, dataset, version), (8, dataset, "v9")]) == [
            (7, READER)
        ]


def test_a_binding_candidate_is_the_latest_completed_output_not_the_runs_own(
    engine: sa.Engine,
) -> None:
    version, dataset = _seed(engine)
    failed = "01890000-0000-7000-8000-000000000002"
    out = [{"namespace": "ns", "name": "t"}]
    record_event(engine, _event("FAIL", failed, 8, "writer", outputs=out))
    asked = [
        (dataset, False, READER, AT + timedelta(minutes=9)),  # the failed output is no candidate
        (dataset, False, READER, AT),  # before any output
        (dataset, False, WRITER, AT + timedelta(minutes=9)),  # a run's own output is not
        (dataset, True, READER, AT + timedelta(minutes=9)),  # a lake dataset: no commit yet
    ]
    with engine.connect() as conn:
        assert inputs.candidates_at(conn, asked) == [version, None, None, None]


def test_join_read_refuses_a_join_with_nothing_to_join_on(engine: sa.Engine) -> None:
    try:
        inputs.join_read(sa.select(s.datasets.c.uuid))
    except ValueError as e:
        assert "run or a version" in str(e)
    else:
        raise AssertionError("joined run_inputs on nothing")


def test_rebind_moves_exactly_the_bindings_named_and_delete_drops_a_runs_own(
    engine: sa.Engine,
) -> None:
    version, _ = _seed(engine)
    with engine.begin() as conn:
        inputs.rebind(
            conn,
            gone=[inputs.Binding(READER, version)],
            new=[inputs.Binding(IDLE, version), inputs.Binding(WRITER, version)],
        )
    with engine.connect() as conn:
        assert _bindings(conn) == {(IDLE, version), (WRITER, version)}
    with engine.begin() as conn:
        inputs.delete_of_runs(conn, [IDLE])
    with engine.connect() as conn:
        assert _bindings(conn) == {(WRITER, version)}
        assert inputs.readers_among(conn, [IDLE, WRITER]) == {WRITER}


def test_a_rebind_that_fails_leaves_the_bindings_as_they_were(engine: sa.Engine) -> None:
    version, _ = _seed(engine)
    try:
        with engine.begin() as conn:
            inputs.rebind(
                conn,
                gone=[inputs.Binding(READER, version)],
                new=[inputs.Binding(IDLE, version), inputs.Binding(IDLE, version)],
            )
    except sa.exc.IntegrityError:
        pass
    else:
        raise AssertionError("bound one run to one version twice")
    with engine.connect() as conn:
        assert _bindings(conn) == {(READER, version)}


def test_the_run_count_join_counts_each_jobs_runs(engine: sa.Engine) -> None:
    _seed(engine)
    j = s.jobs
    with engine.connect() as conn:
        joined, run_count = counts.join_run_count(j, j.c.uuid)
        rows = conn.execute(sa.select(j.c.name, run_count).select_from(joined)).all()
    assert sorted(rows) == [("reader", 2), ("writer", 1)]


def _counts(conn: sa.Connection) -> tuple[dict[str, int], dict[str, int]]:
    """Each job's run count as kept, and as counted from ``runs``."""
    r = s.runs
    kept = {str(j): int(n) for j, n in conn.execute(sa.select(s.job_run_counts)).all()}
    counted = sa.select(r.c.job_uuid, sa.func.count()).group_by(r.c.job_uuid)
    return kept, {str(j): int(n) for j, n in conn.execute(counted).all()}


def test_run_counts_follow_runs_added_moved_and_removed_many_at_a_time(
    engine: sa.Engine,
) -> None:
    """A fold adds a group's runs in one statement, retention removes many in one: each
    job's count follows, and a job left without runs loses its row."""
    for n in range(3):
        record_event(engine, _event("COMPLETE", f"01890000-0000-7000-8000-{n:012d}", n, f"job{n}"))
    r, j = s.runs, s.jobs
    with engine.begin() as conn:
        job = {name: str(u) for name, u in conn.execute(sa.select(j.c.name, j.c.uuid)).all()}
        bare = [f"01890000-0000-7000-9000-{n:012d}" for n in range(30)]
        rows = [
            {"uuid": u, "job_uuid": job[f"job{n % 3}"], "created_at": AT, "updated_at": AT}
            for n, u in enumerate(bare)
        ]
        conn.execute(r.insert().values(rows))
        kept, counted = _counts(conn)
        assert kept == counted and sorted(counted.values()) == [11, 11, 11]
        # one statement each: job0's bare runs go, two of job1's move to job2
        conn.execute(r.delete().where(r.c.uuid.in_(bare[0::3])))
        conn.execute(r.update().where(r.c.uuid.in_(bare[1:5:3])).values(job_uuid=job["job2"]))
        conn.execute(r.delete().where(r.c.uuid == bare[2]))
        kept, counted = _counts(conn)
        assert kept == counted == {job["job0"]: 1, job["job1"]: 9, job["job2"]: 12}
        conn.execute(r.update().where(r.c.job_uuid == job["job0"]).values(job_uuid=job["job1"]))
        kept, counted = _counts(conn)
    assert kept == counted == {job["job1"]: 10, job["job2"]: 12}
