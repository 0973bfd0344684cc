"""The runs owner's contract, on every backend: a run's state history and the
inputFacets its readers sent, as the fold files them, replaced whole and dropped with
the run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from strata.lineage.record.apply import record_event
from strata.store import schema as s
from strata.store.owners.runs import said as runs

AT = datetime(2026, 1, 1, tzinfo=UTC)
WRITER = "01890000-0000-7000-8000-000000000001"
FACET = {"_producer": "https://example.com/tests", "_schemaURL": "https://example.com/f.json"}
READERS = ["01890000-0000-7000-8000-0000000000a1", "01890000-0000-7000-8000-0000000000a2"]


def _event(kind: str, run: str, minutes: int, **io: Any) -> dict[str, Any]:
    return {
        "eventType": kind,
        "eventTime": (AT + timedelta(minutes=minutes)).isoformat(),
        "run": {"runId": run},
        "job": {"namespace": "ns", "name": f"job-{run[-2:]}"},
        "producer": "https://example.com/tests",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        **io,
    }


def _seed(engine: sa.Engine) -> str:
    """A writer run (START, COMPLETE) and two readers that sent inputFacets about the
    version it wrote; that version's uuid."""
    record_event(engine, _event("START", WRITER, 0))
    record_event(engine, _event("COMPLETE", WRITER, 1, outputs=[{"namespace": "ns", "name": "t"}]))
    for i, reader in enumerate(READERS):
        facets = {"dataQualityMetrics": {**FACET, "rowCount": 10 + i}}
        if i == 0:
            facets["dataQualityAssertions"] = {**FACET, "assertions": []}
        read = {"namespace": "ns", "name": "t", "inputFacets": facets}
        record_event(engine, _event("COMPLETE", reader, 5 + i, inputs=[read]))
    with engine.connect() as conn:
        return str(conn.execute(sa.select(s.dataset_versions.c.uuid)).scalar_one())


def test_the_fold_files_state_histories_and_reader_facets(engine: sa.Engine) -> None:
    version = _seed(engine)
    with engine.connect() as conn:
        assert runs.state_history(conn, WRITER) == [
            ("RUNNING", AT),
            ("COMPLETED", AT + timedelta(minutes=1)),
        ]
        assert runs.state_history(conn, "01890000-0000-7000-8000-0000000000ff") == []
        both = runs.readers_input_facets(conn, [version, version], readers=20)
        newest = runs.readers_input_facets(conn, [version], readers=1)
    # The later reader's metric wins; the earlier one's assertions stay.
    assert both == {
        version: {
            "dataQualityMetrics": {**FACET, "rowCount": 11},
            "dataQualityAssertions": {**FACET, "assertions": []},
        }
    }
    assert newest == {version: {"dataQualityMetrics": {**FACET, "rowCount": 11}}}


def test_a_runs_rows_are_replaced_whole_and_go_with_it(engine: sa.Engine) -> None:
    version = _seed(engine)
    later = AT + timedelta(hours=1)
    with engine.begin() as conn:
        runs.replace_states(
            conn, [WRITER], [runs.Transition(READERS[0], WRITER, "FAILED", later, None)]
        )
        runs.replace_input_facets(
            conn, [READERS[1]], [runs.InputFacets(READERS[1], version, {"x": {"y": 1}}, later)]
        )
        runs.replace_states(conn, [], [])
    with engine.connect() as conn:
        assert runs.state_history(conn, WRITER) == [("FAILED", later)]
        assert runs.readers_input_facets(conn, [version], readers=1) == {version: {"x": {"y": 1}}}
    with engine.begin() as conn:
        runs.delete_said(conn, [WRITER, *READERS])
    with engine.connect() as conn:
        assert runs.state_history(conn, WRITER) == []
        assert runs.readers_input_facets(conn, [version], readers=20) == {}
