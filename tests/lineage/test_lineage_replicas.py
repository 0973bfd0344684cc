"""Several `strata serve` replicas on one PostgreSQL store, as behind a load balancer:
events of one run split across them in any order with duplicates give the model one
server builds, every replica reads fast after ingest, a replica killed mid-ingest loses
nothing it acknowledged, and a second server on a SQLite store refuses to start."""

from __future__ import annotations

import random
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from lineage_support import ds, dump, run_event
from scenario import story

from console import user_environ
from http_client import HTTP
from serve_process import EXE, Served, free_port
from strata.lineage.record import apply
from strata.lineage.record.apply import RecordResult, accept_parsed, record_event
from strata.lineage.record.events import Event, parse_event
from strata.store import schema as s
from strata.store.engine import create_engine


def _env(url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "STRATA_DATABASE_URL": url,
        "STRATA_HOME": str(tmp_path / ".strata"),
        "STRATA_LAKE_URI": (tmp_path / "lake").as_uri(),
    }


def _events(runs: int, *, with_story: bool = True) -> list[dict[str, Any]]:
    """The order-independence story and ``runs`` three-event runs of a chain of jobs,
    each reading the dataset the one before wrote."""
    out = story() if with_story else []
    for i in range(runs):
        io = {"inputs": [ds("ns", f"t{i % 17}")], "outputs": [ds("ns", f"t{i % 17 + 1}")]}
        for kind, minute in (("START", 0.0), ("RUNNING", 0.5), ("COMPLETE", 1.0)):
            out.append(run_event(kind, 100 + i + minute, f"r{i}", f"job{i % 23}", **io))
    return out


@pytest.fixture
def store_url(pg_databases: Any) -> str:
    return str(pg_databases.migrated())


def _post_all(urls: list[str], events: list[dict[str, Any]], *, clients: int = 8) -> list[int]:
    """POST each event to a replica picked at random, from ``clients`` threads; the
    answers' status codes."""
    pick = random.Random(3)
    targets = [pick.choice(urls) for _ in events]

    def send(args: tuple[str, dict[str, Any]]) -> int:
        url, event = args
        return HTTP.post(f"{url}/lineage", json=event, timeout=60).status_code

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(send, zip(targets, events, strict=True)))


def _read_seconds(url: str) -> float:
    began = time.monotonic()
    answer = HTTP.get(f"{url}/namespaces/ns/jobs", params={"limit": 5}, timeout=60)
    assert answer.status_code == 200, answer.text
    return time.monotonic() - began


def _reference(url: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The model one writer builds from ``events`` taken in order, each once (on one
    pooled connection: a new one for each of a thousand events took 20 s)."""
    engine = create_engine(url)
    try:
        for event in events:
            record_event(engine, event)
        return dump(engine)
    finally:
        engine.dispose()


def _model(url: str) -> dict[str, Any]:
    """The model the servers built, without the ``default`` namespace and source every
    server makes when it starts (at its own time)."""
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        model = dump(engine)
    finally:
        engine.dispose()
    for table in ("namespaces", "sources"):
        model[table] = [row for row in model[table] if row[0] != "default"]
    return model


def _pending(url: str) -> list[tuple[str, str | None]]:
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            p = s.lineage_pending
            return [tuple(r) for r in conn.execute(sa.select(p.c.payload_hash, p.c.error))]
    finally:
        engine.dispose()


def _queue_directly(url: str, events: list[dict[str, Any]]) -> None:
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        queued = accept_parsed(engine, engine, [parse_event(e) for e in events])
        assert all(isinstance(q, RecordResult) and not q.duplicate for q in queued)
    finally:
        engine.dispose()


def test_events_split_across_replicas_build_the_model_one_server_builds(
    tmp_path: Path, store_url: str, pg_databases: Any
) -> None:
    events = _events(300)
    sent = events + random.Random(1).sample(events, len(events) // 10)  # duplicates
    random.Random(2).shuffle(sent)
    with ExitStack() as stack:
        replicas = [stack.enter_context(Served(tmp_path, _env(store_url, tmp_path))) for _ in "abc"]
        urls = [r.url for r in replicas]
        codes = _post_all(urls, sent)
        assert set(codes) <= {200, 201}, sorted(set(codes))
        # A replica's first read waits for the fold of the events it acknowledged (as
        # long as its share takes on a loaded machine); then it answers as fast as a lone
        # server, however the events were split, while the others may still fold theirs:
        # none waits for a fold of events another replica folded.
        for url in urls:
            _read_seconds(url)
            assert _read_seconds(url) < 1.0
        states = {
            r["id"]: r["state"]
            for r in httpx.get(f"{urls[0]}/namespaces/ns/jobs/job0/runs", timeout=30).json()["runs"]
        }
        assert len(states) == len(range(0, 300, 23)) and set(states.values()) == {"COMPLETED"}
    assert _pending(store_url) == []
    assert _model(store_url) == _reference(str(pg_databases.migrated()), events)


def test_a_replica_killed_mid_ingest_loses_nothing_it_acknowledged(
    tmp_path: Path, store_url: str
) -> None:
    events = _events(400, with_story=False)
    acked: list[dict[str, Any]] = []
    with (
        Served(tmp_path, _env(store_url, tmp_path)) as doomed,
        Served(tmp_path, _env(store_url, tmp_path)) as survivor,
    ):
        lock = threading.Lock()

        def send(event: dict[str, Any]) -> None:
            try:
                answer = HTTP.post(f"{doomed.url}/lineage", json=event)
            except httpx.TransportError:
                return  # not acknowledged: the sender would send it again
            if answer.status_code == 201:
                with lock:
                    acked.append(event)

        with ThreadPoolExecutor(8) as pool:
            futures = [pool.submit(send, e) for e in events]
            while len(acked) < len(events) // 3:
                time.sleep(0.01)
            doomed.stop(signal.SIGKILL)
            for future in futures:
                future.result()
        assert len(events) // 3 <= len(acked) < len(events)
        # What a replica killed between acknowledging and folding leaves: queued rows.
        left = [run_event(k, 900, f"left{i}", "gone") for i in range(3) for k in ("START", "FAIL")]
        _queue_directly(store_url, left)
        acked += left
        # Nobody runs a command: the survivor folds what the dead one left queued.
        deadline = time.monotonic() + 30
        while _pending(store_url) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _pending(store_url) == []
        assert _read_seconds(survivor.url) < 1.0
    engine = create_engine(store_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        e = s.lineage_events
        stored = {(str(r[0]), r[1]) for r in conn.execute(sa.select(e.c.run_uuid, e.c.event_type))}
    engine.dispose()
    assert {(x["run"]["runId"], x["eventType"]) for x in acked} <= stored


def test_a_fold_waiting_for_the_writer_lock_has_claimed_and_parsed_other_events(
    store_url: str, monkeypatch: Any
) -> None:
    """Two replicas' folds at once: while one holds the writer lock, the other claims
    the next events and parses them, then folds them when the lock is free. Every event
    is stored once and leaves the queue, and the two groups are disjoint."""
    events = _events(60, with_story=False)
    _queue_directly(store_url, events)
    engine = create_engine(store_url, pool_size=4)
    holding, release = threading.Event(), threading.Event()
    parsed_while_held: list[str] = []
    real_apply, real_payloads = apply._store_and_apply, apply._payloads

    def slow_apply(conn: sa.Connection, group: list[Event], received: Any) -> Any:
        if threading.current_thread().name == "first":
            holding.set()
            assert release.wait(30)
        return real_apply(conn, group, received)

    def payloads(conn: sa.Connection, hashes: Any) -> Any:
        if threading.current_thread().name == "second":
            assert holding.wait(30)  # the first fold holds the writer lock now
            parsed_while_held.extend(hashes)
        return real_payloads(conn, hashes)

    monkeypatch.setattr(apply, "_store_and_apply", slow_apply)
    monkeypatch.setattr(apply, "_payloads", payloads)
    folded: dict[str, list[str]] = {}

    def fold(limit: int) -> None:
        name = threading.current_thread().name
        folded[name] = apply.fold_pending(engine, engine, limit).folded

    try:
        first = threading.Thread(target=fold, args=(100,), name="first")
        first.start()
        assert holding.wait(30)
        second = threading.Thread(target=fold, args=(len(events),), name="second")
        second.start()
        deadline = time.monotonic() + 30
        while not parsed_while_held and time.monotonic() < deadline:
            time.sleep(0.01)
        # The second fold read and parsed its group while the first held the lock.
        assert parsed_while_held
        assert second.is_alive()  # and waits for the lock to write it
        release.set()
        first.join(30)
        second.join(30)
    finally:
        release.set()
        engine.dispose()
    assert len(folded["first"]) == 100 and sorted(parsed_while_held) == sorted(folded["second"])
    assert not set(folded["first"]) & set(folded["second"])
    assert len(folded["first"]) + len(folded["second"]) == len(events)
    assert _pending(store_url) == []
    engine = create_engine(store_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        e = s.lineage_events
        hashes = [str(h) for h in conn.execute(sa.select(e.c.payload_hash)).scalars()]
    engine.dispose()
    assert len(hashes) == len(set(hashes)) == len(events)


def test_a_second_server_on_a_sqlite_store_refuses_to_start(tmp_path: Path) -> None:
    env = _env(f"sqlite:///{tmp_path / 'meta.db'}", tmp_path)
    with Served(tmp_path, env) as first:
        clean = user_environ()
        second = subprocess.run(
            [str(EXE), "serve", "--port", str(free_port())],
            check=False,
            cwd=tmp_path,
            env={**clean, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode != 0
        said = second.stderr + second.stdout
        assert f"pid {first.proc.pid}" in said and "PostgreSQL" in said, said
        assert "Traceback" not in said
        assert httpx.get(f"{first.url}/health").status_code == 200
        first.stop(signal.SIGKILL)
    # The lock died with the process: the next server starts.
    with Served(tmp_path, env) as after:
        assert httpx.get(f"{after.url}/health").status_code == 200
