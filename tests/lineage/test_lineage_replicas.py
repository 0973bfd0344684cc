"""Several `strata serve` replicas on one PostgreSQL store, as behind a load balancer:
events of one run split across them in any order with duplicates give the model one
server builds, every replica reads fast after ingest, a replica killed mid-ingest loses
nothing it acknowledged, and a second server on a SQLite store refuses to start."""

from __future__ import annotations

import random
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

from serve_process import Served
from strata.lineage.ingest.transactions import ingest_event
from strata.store import migrate
from strata.store import schema as s
from strata.store.engine import create_engine

pytestmark = pytest.mark.usefixtures("pg_databases")


def _env(url: str, tmp_path: Path) -> dict[str, str]:
    return {
        "STRATA_DATABASE_URL": url,
        "STRATA_HOME": str(tmp_path / ".strata"),
        "STRATA_LAKE_URI": (tmp_path / "lake").as_uri(),
    }


def _events(runs: int) -> list[dict[str, Any]]:
    """The order-independence story and ``runs`` three-event runs of a chain of jobs,
    each reading the dataset the one before wrote."""
    out = story()
    for i in range(runs):
        io = {"inputs": [ds("ns", f"t{i % 17}")], "outputs": [ds("ns", f"t{i % 17 + 1}")]}
        for kind, minute in (("START", 0.0), ("RUNNING", 0.5), ("COMPLETE", 1.0)):
            out.append(run_event(kind, 100 + i + minute, f"r{i}", f"job{i % 23}", **io))
    return out


def _migrated(pg_databases: Any) -> str:
    url = str(pg_databases.new())
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    migrate.upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def store_url(pg_databases: Any) -> str:
    return _migrated(pg_databases)


def _post_all(urls: list[str], events: list[dict[str, Any]], *, clients: int = 8) -> list[int]:
    """POST each event to a replica picked at random, from ``clients`` threads; the
    answers' status codes."""
    pick = random.Random(3)
    targets = [pick.choice(urls) for _ in events]

    def send(args: tuple[str, dict[str, Any]]) -> int:
        url, event = args
        return httpx.post(f"{url}/lineage", json=event, timeout=60).status_code

    with ThreadPoolExecutor(clients) as pool:
        return list(pool.map(send, zip(targets, events, strict=True)))


def _read_seconds(url: str) -> float:
    began = time.monotonic()
    answer = httpx.get(f"{url}/namespaces/ns/jobs", params={"limit": 5}, timeout=60)
    assert answer.status_code == 200, answer.text
    return time.monotonic() - began


def _reference(url: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The model one writer builds from ``events`` taken in order, each once."""
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        for event in events:
            ingest_event(engine, event)
        return dump(engine)
    finally:
        engine.dispose()


def _model(url: str) -> dict[str, Any]:
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        return dump(engine)
    finally:
        engine.dispose()


def _pending(url: str) -> list[tuple[str, str | None]]:
    engine = create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            p = s.lineage_pending
            return [tuple(r) for r in conn.execute(sa.select(p.c.payload_hash, p.c.error))]
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
        # Each replica answers as fast as a lone server once ingest is over, however the
        # events were split: none waits for a fold of events another replica folded.
        for url in urls:
            assert _read_seconds(url) < 1.0
            assert _read_seconds(url) < 1.0
        states = {
            r["id"]: r["state"]
            for r in httpx.get(f"{urls[0]}/namespaces/ns/jobs/job0/runs", timeout=30).json()["runs"]
        }
        assert len(states) == len(range(0, 300, 23)) and set(states.values()) == {"COMPLETED"}
    assert _pending(store_url) == []
    assert _model(store_url) == _reference(_migrated(pg_databases), events)
