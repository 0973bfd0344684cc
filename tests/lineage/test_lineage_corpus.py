"""Every event of the shared conformance corpus goes through ingest."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from lineage_support import corpus, load, rows

from strata.errors import InvalidEvent
from strata.lineage.ingest import ingest_event
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
                ingest_event(engine, payload)
            assert "$.run.runId" in err.value.message and "'run_id'" in err.value.message
            assert err.value.details["path"] == "$.run.runId"
        else:
            result = ingest_event(engine, payload)
            assert result.payload_hash
    # Re-sending everything changes nothing.
    for rel in files:
        if rel not in NEGATIVE:
            assert ingest_event(engine, load(rel)).duplicate
    stored = rows(engine, sa.select(sa.func.count()).select_from(s.lineage_events))[0][0]
    assert stored == len({json.dumps(load(r), sort_keys=True) for r in files if r not in NEGATIVE})
