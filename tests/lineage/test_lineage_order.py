"""The stored model depends only on the set of distinct events, never on arrival order."""

from __future__ import annotations

import random
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lineage_support import dump, run_event, wipe
from scenario import story

from strata import ids
from strata.errors import InvalidEvent
from strata.lineage.record import runs
from strata.lineage.record.apply import record_batch, record_event
from strata.lineage.record.events import Event

EVENTS = story()


def replay(engine: sa.Engine, order: list[dict[str, Any]]) -> dict[str, Any]:
    wipe(engine)
    for event in order:
        record_event(engine, event)
    return dump(engine)


@st.composite
def deliveries(draw: st.DrawFn) -> list[dict[str, Any]]:
    order = list(draw(st.permutations(EVENTS)))
    for extra in draw(st.lists(st.sampled_from(EVENTS), max_size=4)):
        order.insert(draw(st.integers(0, len(order))), extra)
    return order


def test_any_order_with_duplicates_gives_the_same_tables(engine: sa.Engine) -> None:
    expected = replay(engine, EVENTS)
    assert expected["dataset_versions"] and expected["run_inputs"] and expected["job_aliases"]
    assert [r[2] for r in expected["sources"]] == ["s3://new"]
    # Every symlink a dataset was given stays; of two types for one, the largest.
    assert sorted(r[1:] for r in expected["dataset_symlinks"]) == [
        ("glue", "db.source", "TABLE"),
        ("hive", "db.source", "VIEW"),
    ]
    assert expected == replay(engine, list(reversed(EVENTS)))

    @settings(
        max_examples=20,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(deliveries())
    def check(order: list[dict[str, Any]]) -> None:
        got = replay(engine, order)
        for table, rows in expected.items():
            assert got[table] == rows, table

    check()


def test_batches_give_the_same_tables_as_single_events(engine: sa.Engine, monkeypatch: Any) -> None:
    expected = replay(engine, EVENTS)
    real = runs.apply_run_events

    def refusing(conn: sa.Connection, events: list[Event]) -> None:
        real(conn, events)  # its writes must go with it
        if any(event.job_name == "refused" for event in events):
            raise InvalidEvent("refused by the store", path="$.job.name")

    monkeypatch.setattr(runs, "apply_run_events", refusing)
    for seed, size in ((1, 4), (2, 9), (3, len(EVENTS) + 3)):
        order = list(EVENTS)
        random.Random(seed).shuffle(order)
        order.insert(seed, order[-1])
        # Refused when applied, which sends the last batch down the one-savepoint-per-event
        # path; it must leave nothing behind.
        order.append(run_event("START", 40, "clash", "refused", parent=("dag", "dag")))
        wipe(engine)
        results = []
        for i in range(0, len(order), size):
            results += record_batch(engine, order[i : i + size])
        assert isinstance(results[-1], InvalidEvent)
        assert not any(isinstance(r, Exception) for r in results[:-1])
        got = dump(engine)
        for table, rows in expected.items():
            assert got[table] == rows, (seed, table)


def test_jobs_named_alike_under_one_parent_in_any_order(engine: sa.Engine) -> None:
    """``task`` and ``dag.task`` under ``dag`` both want the name ``dag.task``."""
    import itertools

    from strata.store import schema as s

    parents = [run_event("START", 0, "p", "dag"), run_event("START", 0, "q", "other")]
    children = [
        run_event("START", 1, "a", "task", parent=("p", "dag")),
        run_event("START", 2, "b", "dag.task", parent=("p", "dag")),
        # b's job moves to another parent later: ``task`` may then have the name.
        run_event("COMPLETE", 3, "c", "dag.task", parent=("q", "other")),
    ]
    expected = replay(engine, parents + children)
    with engine.connect() as conn:
        names = conn.execute(sa.select(s.jobs.c.name).order_by(s.jobs.c.name)).scalars().all()
    assert names == ["dag", "dag.task", "other", "other.dag.task"]
    partial = replay(engine, parents + children[:2])
    with engine.connect() as conn:
        named = conn.execute(sa.select(s.jobs.c.fold_state, s.jobs.c.name)).all()
    assert {state["raw"]: name for state, name in named} == {
        "dag": "dag",
        "other": "other",
        "dag.task": "dag.task",
        "task": "task",
    }
    for order in itertools.permutations(parents + children[:2]):
        assert replay(engine, list(order)) == partial, [e["job"]["name"] for e in order]
    for order in itertools.permutations(parents + children):
        assert replay(engine, list(order)) == expected, [e["job"]["name"] for e in order]


def test_a_parent_named_by_many_children_in_one_batch_folds_as_one_by_one(
    engine: sa.Engine,
) -> None:
    """A batch folds a parent run known only from its children once per deciding child
    (earliest, latest, smallest job): its row is the one the events give one by one."""
    kinds = ["START", "COMPLETE", "FAIL", None, "RUNNING", "ABORT"]
    # One parent named in two namespaces: the smaller job's only by a child in the middle.
    small, large = sorted(("ns", "other"), key=lambda n: ids.job_uuid(n, "pipeline"))
    children = [
        run_event(
            kinds[i % len(kinds)],
            (i * 7) % 11,  # several children at the same minute, the earliest among them
            f"child-{i}",
            f"task-{i % 3}",
            parent=("build", "pipeline"),
            parent_namespace=small if i == 5 else large,  # minute 2: neither end
        )
        for i in range(24)
    ]
    one_by_one = replay(engine, children)
    assert len(one_by_one["runs"]) == 25  # the children and their one parent
    for order in (children, list(reversed(children)), random.Random(7).sample(children, 24)):
        wipe(engine)
        results = record_batch(engine, order)
        assert not [r for r in results if isinstance(r, Exception)]
        assert dump(engine) == one_by_one
