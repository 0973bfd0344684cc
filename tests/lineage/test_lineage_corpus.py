"""Every event of the shared conformance corpus goes through ingest."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from lineage_support import corpus, load, rows

from strata.errors import InvalidEvent
from strata.lineage.record.apply import record_event
from strata.store import schema as s

NEGATIVE = {"compat/simple_run_event/events/simple_run_event.json"}


def _all_files() -> list[str]:
    return sorted(
        str(p.relative_to(corpus())) for p in corpus().rglob("*.json") if p.name != "config.json"
    )


def test_every_corpus_event_is_ingested(engine: sa.Engine) -> None:
    files = _all_files()
    assert len(files) > 60
    for rel in files:
        payload = load(rel)
        if rel in NEGATIVE:
            with pytest.raises(InvalidEvent) as err:
                record_event(engine, payload)
            assert "$.run.runId" in err.value.message and "'run_id'" in err.value.message
            assert err.value.details["path"] == "$.run.runId"
        else:
            result = record_event(engine, payload)
            assert result.payload_hash
    # Re-sending everything changes nothing.
    for rel in files:
        if rel not in NEGATIVE:
            assert record_event(engine, load(rel)).duplicate
    stored = rows(engine, sa.select(sa.func.count()).select_from(s.lineage_events))[0][0]
    assert stored == len({json.dumps(load(r), sort_keys=True) for r in files if r not in NEGATIVE})


def test_the_server_writer_folds_every_corpus_event(engine: sa.Engine) -> None:
    """Acknowledged, queued and folded in groups: none set aside, same model as one by one."""
    from lineage_support import dump, wipe

    from strata.lineage.record.apply import RecordResult
    from strata.lineage.record.writer import GroupWriter
    from strata.store.journal import journal_for

    payloads = [load(rel) for rel in _all_files()]
    writer = GroupWriter(engine)
    futures = [writer.submit(payloads[i : i + 7]) for i in range(0, len(payloads), 7)]
    results = [r for f in futures for r in f.result(timeout=120)]
    assert writer.wait_folded(120)
    writer.close()
    refused = [r for r in results if not isinstance(r, RecordResult)]
    assert len(refused) == len(NEGATIVE)
    p = s.lineage_pending
    with journal_for(engine).connect() as conn:
        assert conn.execute(sa.select(p.c.payload_hash, p.c.error)).all() == []
    folded = dump(engine)
    for table in ("lineage_events", "runs", "datasets", "jobs"):
        assert folded[table], table
    wipe(engine)
    for payload, result in zip(payloads, results, strict=True):
        if isinstance(result, RecordResult):
            record_event(engine, payload)
    assert dump(engine) == folded
