"""Run events reach the store first, then a configured OpenLineage server, through the
client's own composite transport."""

from __future__ import annotations

import logging
import socket
from typing import Any

import pytest
import sqlalchemy as sa
from openlineage.client.transport.composite import CompositeTransport

from ol_events import run_event
from strata.builds.execution.run_events import Emitter
from strata.errors import InvalidEvent
from strata.store import schema as s


def stored(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(s.lineage_events)).scalar())


def test_without_a_remote_events_go_to_the_store_alone(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    emitter = Emitter(engine)
    assert emitter.transport is None  # no client loaded, nothing printed to the console
    emitter.emit(run_event("START"))
    assert stored(engine) == 1


def test_a_configured_remote_gets_each_event_after_the_store(
    engine: sa.Engine,
    collector: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = collector
    monkeypatch.setenv("OPENLINEAGE_URL", url)
    emitter = Emitter(engine)
    assert isinstance(emitter.transport, CompositeTransport)
    event = run_event("COMPLETE", outputs=["ns|out"])
    emitter.emit(event)
    assert stored(engine) == 1
    assert [r["event"]["run"]["runId"] for r in received] == [event["run"]["runId"]]


def test_a_remote_out_of_reach_is_logged_and_the_store_keeps_the_event(
    engine: sa.Engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{port}")
    with caplog.at_level(logging.WARNING, logger="strata.builds.execution.transports"):
        Emitter(engine).emit(run_event("START"))
    assert stored(engine) == 1
    assert any("could not send lineage event" in r.getMessage() for r in caplog.records)


def test_an_event_the_store_refuses_fails_with_the_stores_error_and_goes_nowhere(
    engine: sa.Engine,
    collector: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = collector
    monkeypatch.setenv("OPENLINEAGE_URL", url)
    bad = run_event("START", run={"runId": "not-a-uuid"})
    with pytest.raises(InvalidEvent, match="runId"):
        Emitter(engine).emit(bad)
    assert stored(engine) == 0
    assert received == []
