"""Stored events parsed once: a run's earlier events are not read and parsed again."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from lineage_support import dump, rid, run_event

from strata.lineage.record import parsed
from strata.lineage.record.apply import record_event
from strata.lineage.record.events import parse_event
from strata.store.engine import read_tx


def test_parsed_events_keep_the_latest_few() -> None:
    events = [parse_event(run_event("START", i, f"r{i}", "j")) for i in range(4)]
    kept = parsed.ParsedEvents(2)
    kept.add(events[:3])
    assert [kept.get(e.payload_hash) for e in events[:3]] == [None, events[1], events[2]]
    kept.add([events[1], events[3]])  # added again: the latest once more
    assert kept.get(events[1].payload_hash) is events[1]
    assert kept.get(events[2].payload_hash) is None
    big = parse_event(run_event("START", 0, "big", "j", run_facets=_facet("x" * 70_000)))
    kept.add([big])  # too large to keep a few thousand of
    assert kept.get(big.payload_hash) is None and kept.get(events[3].payload_hash)


def _facet(text: str) -> dict[str, Any]:
    return {"big": {"_producer": "p", "_schemaURL": "s", "text": text}}


def _payload_reads(engine: sa.Engine) -> list[str]:
    reads: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "lineage_events.payload " in statement or "lineage_events.payload\n" in statement:
            reads.append(statement)

    sa.event.listen(engine, "before_cursor_execute", seen)
    return reads


def test_a_runs_earlier_events_are_read_once(engine: sa.Engine, monkeypatch: Any) -> None:
    monkeypatch.setattr(parsed, "PARSED", parsed.ParsedEvents(100))
    record_event(engine, run_event("START", 0, "a", "j"))
    reads = _payload_reads(engine)
    record_event(engine, run_event("COMPLETE", 1, "a", "j"))
    assert reads == [], "the START just folded was read from the store again"
    with read_tx(engine) as conn:
        loaded = parsed.load_events(conn, [rid("a")])
    assert sorted(e.event_type or "" for e in loaded[rid("a")]) == ["COMPLETE", "START"]
    assert reads == []


def test_a_cold_cache_reads_the_same_model(engine: sa.Engine, monkeypatch: Any) -> None:
    monkeypatch.setattr(parsed, "PARSED", parsed.ParsedEvents(100))
    record_event(engine, run_event("START", 0, "a", "j"))
    record_event(engine, run_event("COMPLETE", 1, "a", "j"))
    warm = dump(engine)
    with read_tx(engine) as conn:
        before = parsed.load_events(conn, [rid("a")])
    monkeypatch.setattr(parsed, "PARSED", parsed.ParsedEvents(100))
    reads = _payload_reads(engine)
    with read_tx(engine) as conn:
        after = parsed.load_events(conn, [rid("a")])
    assert len(reads) == 1  # nothing parsed yet: the payloads are read
    key = lambda e: e.payload_hash  # noqa: E731
    assert [e.payload for e in sorted(after[rid("a")], key=key)] == [
        e.payload for e in sorted(before[rid("a")], key=key)
    ]
    assert dump(engine) == warm
