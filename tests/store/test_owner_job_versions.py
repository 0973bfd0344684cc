"""The contract of the job versions owner (``job_versions``, ``job_version_io``), on every
backend: the fold writes a version once with its dataset edges, a version's latest run is
the later one whatever order runs arrive in, retention's recompute and drop take exactly
what they name, and the current graph's edges compose into callers' statements (and, on
PostgreSQL, into one recursive walk)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from strata import ids
from strata.lineage.query.graph_walk import CurrentEdges, walk_levels, walk_recursive
from strata.lineage.query.nodes import NodeRef
from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.jobs import versions

AT = datetime(2026, 1, 1, tzinfo=UTC)
PRODUCER = "https://example.com/tests"


def _run(n: int) -> str:
    return f"01890000-0000-7000-8000-{n:012d}"


def _event(run: str, job: str, minutes: int, reads: str, writes: str) -> dict[str, Any]:
    return {
        "eventType": "COMPLETE",
        "eventTime": (AT + timedelta(minutes=minutes)).isoformat(),
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": job},
        "inputs": [{"namespace": "ns", "name": reads}],
        "outputs": [{"namespace": "ns", "name": writes}],
        "producer": PRODUCER,
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    }


def _seed(engine: sa.Engine) -> None:
    """a -> first -> b -> second -> c, each job run twice at one version."""
    for n, minutes in ((1, 1), (2, 3)):
        record_event(engine, _event(_run(n), "first", minutes, "a", "b"))
    for n, minutes in ((3, 2), (4, 4)):
        record_event(engine, _event(_run(n), "second", minutes, "b", "c"))


def _version_of(conn: sa.Connection, job: str) -> str:
    jv = versions.relation("jv")
    q = sa.select(jv.c.uuid).where(jv.c.job_uuid == ids.job_uuid("ns", job))
    return str(conn.execute(q).scalar_one())


def test_the_fold_writes_each_version_once_with_its_edges(engine: sa.Engine) -> None:
    _seed(engine)
    io, d = versions.io_relation("io"), s.datasets
    with engine.connect() as conn:
        first = _version_of(conn, "first")
        edges = conn.execute(
            sa.select(io.c.io_type, d.c.name)
            .join(d, d.c.uuid == io.c.dataset_uuid)
            .where(io.c.job_version_uuid == first)
            .order_by(io.c.io_type)
        ).all()
        assert edges == [("INPUT", "a"), ("OUTPUT", "b")]
        assert versions.identities(conn, [first, _run(99)]) == {
            first: (ids.job_uuid("ns", "first"), versions.identities(conn, [first])[first][1])
        }
        # Two runs, one version: its times cover both and the later run is its latest.
        jv = versions.relation("jv")
        row = conn.execute(
            sa.select(jv.c.created_at, jv.c.updated_at, jv.c.latest_run_uuid).where(
                jv.c.uuid == first
            )
        ).one()
        assert tuple(row) == (AT + timedelta(minutes=1), AT + timedelta(minutes=3), _run(2))
    # The same rows again insert nothing and no edge twice.
    with engine.begin() as conn:
        stored = conn.execute(sa.select(s.job_versions).where(s.job_versions.c.uuid == first))
        again = [dict(stored.one()._mapping)]
        edge = {"job_version_uuid": first, "dataset_uuid": ids.dataset_uuid("ns", "c")}
        versions.insert_new(conn, again, {first: [{**edge, "io_type": "INPUT"}]})
        versions.insert_new(conn, [], {})
    with engine.connect() as conn:
        count = sa.select(sa.func.count()).select_from(io).where(io.c.job_version_uuid == first)
        assert conn.execute(count).scalar() == 2


def test_widen_keeps_the_later_run_whatever_the_order(engine: sa.Engine) -> None:
    _seed(engine)
    late, early = AT + timedelta(minutes=9), AT - timedelta(minutes=9)
    with engine.connect() as conn:
        first = _version_of(conn, "first")
    jv = versions.relation("jv")
    cols = (jv.c.created_at, jv.c.updated_at, jv.c.latest_run_uuid)
    # Run 2 (the stored latest) is stretched later; run 1, stretched earlier, and then
    # tied with it, does not take its place (a tie goes to the larger id).
    with engine.begin() as conn:
        conn.execute(s.runs.update().where(s.runs.c.uuid == _run(2)).values(updated_at=late))
        versions.widen(conn, [(first, _run(2), AT, late), (first, _run(1), early, AT)])
        versions.widen(conn, [(first, _run(1), early, late)])
        versions.widen(conn, [])
    with engine.connect() as conn:
        assert tuple(conn.execute(sa.select(*cols).where(jv.c.uuid == first)).one()) == (
            early,
            late,
            _run(2),
        )
    # A run later than the latest takes its place.
    with engine.begin() as conn:
        versions.widen(conn, [(first, _run(5), AT, late + timedelta(minutes=1))])
    with engine.connect() as conn:
        assert conn.execute(sa.select(cols[2]).where(jv.c.uuid == first)).scalar() == _run(5)


def _widened_rows(engine: sa.Engine, calls: list[list[tuple[str, str, Any, Any]]]) -> set[Any]:
    """The versions' times and latest runs after ``calls`` of :func:`versions.widen`, in
    one transaction rolled back after."""
    jv = versions.relation("jv")
    with engine.connect() as conn, conn.begin() as tx:
        # Runs 1 and 2 tie on their time (the larger id wins); run 3 ends after run 4;
        # the second version has no latest run yet.
        tie = AT + timedelta(minutes=7)
        for n, at in ((1, tie), (2, tie), (3, AT + timedelta(minutes=8))):
            conn.execute(s.runs.update().where(s.runs.c.uuid == _run(n)).values(updated_at=at))
        second = _version_of(conn, "second")
        conn.execute(
            s.job_versions.update()
            .where(s.job_versions.c.uuid == second)
            .values(latest_run_uuid=None)
        )
        for runs in calls:
            versions.widen(conn, runs)
        rows = {
            tuple(r)
            for r in conn.execute(
                sa.select(jv.c.uuid, jv.c.created_at, jv.c.updated_at, jv.c.latest_run_uuid)
            )
        }
        tx.rollback()
    return rows


def test_widen_of_many_runs_at_once_leaves_what_one_by_one_leaves(engine: sa.Engine) -> None:
    _seed(engine)
    with engine.connect() as conn:
        first, second = _version_of(conn, "first"), _version_of(conn, "second")
    tie, late = AT + timedelta(minutes=7), AT + timedelta(minutes=8)
    runs = [
        (first, _run(1), AT - timedelta(minutes=5), tie),
        (second, _run(4), AT + timedelta(minutes=4), AT + timedelta(minutes=4)),
        (first, _run(2), AT, tie),
        (second, _run(3), AT - timedelta(minutes=1), late),
        (first, _run(1), AT - timedelta(minutes=5), tie),  # a run named twice
    ]
    together = _widened_rows(engine, [runs])
    assert together == _widened_rows(engine, [[r] for r in runs])
    assert together == _widened_rows(engine, [[r] for r in reversed(runs)])
    assert {(v, latest) for v, _, _, latest in together} == {(first, _run(2)), (second, _run(3))}
    assert (first, AT - timedelta(minutes=5), tie, _run(2)) in together


def test_recompute_and_drop_take_exactly_what_they_name(engine: sa.Engine) -> None:
    _seed(engine)
    io, jv = versions.io_relation("io"), versions.relation("jv")
    with engine.begin() as conn:
        first, second = _version_of(conn, "first"), _version_of(conn, "second")
        # A version no run uses any more (retention left it), with one edge.
        row = dict(conn.execute(sa.select(jv).where(jv.c.uuid == first)).one()._mapping)
        orphan = {**row, "uuid": _run(50), "version": "f" * 64}
        edge = {"job_version_uuid": _run(50), "dataset_uuid": ids.dataset_uuid("ns", "a")}
        edge["job_uuid"] = row["job_uuid"]
        versions.insert_new(conn, [orphan], {_run(50): [{**edge, "io_type": "INPUT"}]})
        versions.update_times(
            conn, [{"uuid": first, "created_at": AT, "updated_at": AT, "latest_run_uuid": None}]
        )
        versions.delete(conn, [_run(50), _run(99)])
    with engine.connect() as conn:
        found = dict(conn.execute(sa.select(jv.c.uuid, jv.c.latest_run_uuid)).all())
        assert found == {first: None, second: _run(4)}
        assert set(conn.execute(sa.select(io.c.job_version_uuid)).scalars()) == {first, second}


def test_the_current_graph_walks_the_same_by_levels_and_in_one_statement(
    engine: sa.Engine, backend: str
) -> None:
    _seed(engine)
    first, second = ids.job_uuid("ns", "first"), ids.job_uuid("ns", "second")
    start = NodeRef("DATASET", ids.dataset_uuid("ns", "a"), "ns", "a")
    with engine.connect() as conn:
        jobs, edges = walk_levels(CurrentEdges(conn), start, depth=5)
        assert set(jobs) == {first, second}
        assert {(j, e) for j, _, e in edges} == {
            (first, "INPUT"),
            (first, "OUTPUT"),
            (second, "INPUT"),
            (second, "OUTPUT"),
        }
        near, _ = walk_levels(CurrentEdges(conn), start, depth=0)
        assert set(near) == {first}
        if backend == "postgresql":  # the recursive statement is PostgreSQL's own
            assert walk_recursive(conn, start, 5) == (jobs, edges)
            assert walk_recursive(conn, start, 0)[0] == near
