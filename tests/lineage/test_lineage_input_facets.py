"""The input facets readers send about a version (``run_input_facets``): filed under the
version each run is bound to, rewritten with the run's bindings, in any arrival order,
and filled by migration 0022 for runs folded before it; on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

import sqlalchemy as sa

from ol_events import facet, run_event
from strata.lineage.query import datasets
from strata.lineage.record.apply import record_event
from strata.store import migrate
from strata.store.engine import read_tx

NS = "shop"


def _read(at: str, run_id: str, ok: bool, event: str = "COMPLETE", ns: str = NS) -> Any:
    said = facet(assertions=[{"assertion": "not_null", "success": ok, "column": "id"}])
    orders = {"namespace": ns, "name": "orders", "inputFacets": {"dataQualityAssertions": said}}
    return run_event(event, run_id, job="check", namespace=ns, at=at, inputs=[orders])


def _write(at: str, ns: str = NS) -> dict[str, Any]:
    return run_event(job="load", namespace=ns, at=at, outputs=[(ns, "orders")])


def _stored(engine: sa.Engine, runs: set[str] | None = None) -> set[tuple[str, str, bool]]:
    """(run, version, success) of each stored row (of ``runs``), checked against the
    run's binding."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT f.run_uuid, f.dataset_version_uuid, f.facets FROM run_input_facets f "
                "LEFT JOIN run_inputs ri ON ri.run_uuid = f.run_uuid "
                "AND ri.dataset_version_uuid = f.dataset_version_uuid"
                " WHERE ri.run_uuid IS NOT NULL"
            )
        ).all()
        total = conn.execute(sa.text("SELECT count(*) FROM run_input_facets")).scalar_one()
    assert total == len(rows), "a row for a version its run is not bound to"
    out = set()
    for run, version, stored in rows:
        if runs is not None and str(run) not in runs:
            continue
        facets = stored if isinstance(stored, dict) else json.loads(stored)
        ok = facets["dataQualityAssertions"]["assertions"][0]["success"]
        out.add((str(run), str(version), ok))
    return out


def _shown(engine: sa.Engine, ns: str = NS) -> Any:
    with read_tx(engine) as conn:
        return datasets.get_dataset(conn, ns, "orders").facets.get("dataQualityAssertions")


def test_each_reader_files_its_facets_under_the_version_it_read(engine: sa.Engine) -> None:
    for k, order in enumerate(([0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2])):
        ns = f"shop{k}"  # each arrival order in a namespace of its own
        first, second = str(uuid.uuid4()), str(uuid.uuid4())
        events = [
            _write("2024-05-01T10:00:00Z", ns),
            _read("2024-05-01T11:00:00Z", first, ok=True, ns=ns),
            _write("2024-05-01T12:00:00Z", ns),
            _read("2024-05-01T13:00:00Z", second, ok=False, ns=ns),
        ]
        for i in order:
            record_event(engine, events[i])
        rows = _stored(engine, {first, second})
        assert {(r, ok) for r, _, ok in rows} == {(first, True), (second, False)}, order
        # Each read a different version: the one current when it ran.
        assert len({v for _, v, _ in rows}) == 2, order
        assert _shown(engine, ns)["assertions"][0]["success"] is False


def test_a_later_event_of_the_run_replaces_what_it_said(engine: sa.Engine) -> None:
    run = str(uuid.uuid4())
    record_event(engine, _write("2024-05-01T10:00:00Z"))
    record_event(engine, _read("2024-05-01T11:00:00Z", run, ok=True, event="START"))
    record_event(engine, _read("2024-05-01T11:05:00Z", run, ok=False))
    assert [ok for _, _, ok in _stored(engine)] == [False]
    assert _shown(engine)["assertions"][0]["success"] is False


def test_the_upgrade_to_0022_fills_the_table_from_the_runs(engine: sa.Engine) -> None:
    runs = [str(uuid.uuid4()) for _ in range(2)]
    record_event(engine, _write("2024-05-01T10:00:00Z"))
    for run, at, ok in zip(runs, ("11:00", "12:00"), itertools.cycle((True, False))):
        record_event(engine, _read(f"2024-05-01T{at}:00Z", run, ok=ok))
    before = _stored(engine)
    assert len(before) == 2
    migrate.downgrade(engine, "0021")
    migrate.upgrade(engine)
    assert _stored(engine) == before
    assert _shown(engine)["assertions"][0]["success"] is False
