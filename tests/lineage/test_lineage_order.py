"""The stored model depends only on the set of distinct events, never on arrival order."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lineage_support import dump
from scenario import story

from strata.lineage.ingest import ingest_event
from strata.store.schema import metadata

EVENTS = story()


def wipe(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())


def replay(engine: sa.Engine, order: list[dict[str, Any]]) -> dict[str, Any]:
    wipe(engine)
    for event in order:
        ingest_event(engine, event)
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
