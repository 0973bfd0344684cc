"""Retention of the lineage store: runs older than the limit go with their events,
states, inputs and facets, batch by batch; a run that made a lake version, each job's
newest run and a parent with a child left stay; a dataset version that outlives its run
stays whole; nothing is left pointing at a deleted run, even while events arrive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from lineage_support import T0, ds, rid, run_event

from strata.lake.service import Lake
from strata.lineage.record import prune
from strata.lineage.record.apply import record_batch, record_event
from strata.retention.lineage import LineageRetention
from strata.settings import Settings
from strata.store import schema as s

DAY = 24 * 60.0  # minutes
NOW = T0 + timedelta(days=100)  # with 90 days kept, the cutoff is day 10


def one_run(engine: sa.Engine, day: float, run: str, job: str, **io: Any) -> None:
    record_event(engine, run_event("START", day * DAY, run, job, **io))
    record_event(engine, run_event("COMPLETE", day * DAY + 1, run, job, **io))


def runs(engine: sa.Engine) -> set[str]:
    with engine.connect() as conn:
        return {str(u) for u in conn.execute(sa.select(s.runs.c.uuid)).scalars()}


def expire(engine: sa.Engine, settings: Settings, **kw: Any) -> dict[str, Any]:
    done = LineageRetention(engine, settings, days=90).run(now=NOW, **kw)
    return done.to_dict()


def nothing_points_at_a_missing_run(engine: sa.Engine) -> None:
    """Every row that names a run names one that exists, and the run counts agree."""
    with engine.connect() as conn:
        have = {str(u) for u in conn.execute(sa.select(s.runs.c.uuid)).scalars()}
        for table in (s.run_states, s.run_inputs, s.run_input_facets, s.check_results):
            named = {str(u) for u in conn.execute(sa.select(table.c.run_uuid)).scalars()}
            assert named <= have, (table.name, named - have)
        for table in (s.lineage_events, s.dataset_versions):
            query = sa.select(table.c.run_uuid).where(table.c.run_uuid.is_not(None))
            named = {str(u) for u in conn.execute(query).scalars()}
            assert named <= have, (table.name, named - have)
        parents = sa.select(s.runs.c.parent_run_uuid).where(s.runs.c.parent_run_uuid.is_not(None))
        assert {str(u) for u in conn.execute(parents).scalars()} <= have
        counted = dict(conn.execute(sa.select(s.job_run_counts)).all())
        actual = dict(
            conn.execute(
                sa.select(s.runs.c.job_uuid, sa.func.count()).group_by(s.runs.c.job_uuid)
            ).all()
        )
        assert counted == actual


def test_old_runs_go_with_their_events_and_the_newest_stays(
    engine: sa.Engine, settings: Settings
) -> None:
    for day, run in ((0, "a0"), (5, "a5"), (30, "a30")):
        one_run(engine, day, run, "extract", outputs=[ds("db", f"table_{run}")])
    one_run(engine, 1, "lonely", "once")  # old, but its job's only run
    dry = expire(engine, settings, dry_run=True)
    assert dry["runs"] == 2 and dry["events"] == 4
    assert runs(engine) >= {rid("a0"), rid("a5")}  # a dry run deletes nothing

    done = expire(engine, settings)
    assert done["runs"] == 2 and done["events"] == 4 and done["kept_other_runs"] == 1
    assert runs(engine) == {rid("a30"), rid("lonely")}
    with engine.connect() as conn:
        left = conn.execute(sa.select(s.lineage_events.c.run_uuid)).scalars().all()
        assert sorted(set(map(str, left))) == sorted({rid("a30"), rid("lonely")})
        names = conn.execute(
            sa.select(s.datasets.c.name, s.dataset_versions.c.run_uuid).join(
                s.datasets, s.datasets.c.uuid == s.dataset_versions.c.dataset_uuid
            )
        ).all()
    # The outputs each deleted run made were their datasets' current versions: they stay,
    # without their run.
    assert {n: (str(r) if r else None) for n, r in names} == {
        "table_a0": None,
        "table_a5": None,
        "table_a30": rid("a30"),
    }
    nothing_points_at_a_missing_run(engine)
    passes = LineageRetention(engine, settings, days=90)
    assert passes.due(NOW + timedelta(hours=1)) is False  # the pass just ran (now = real time)


def test_a_version_another_run_read_stays_and_an_unread_one_goes(
    engine: sa.Engine, settings: Settings
) -> None:
    one_run(engine, 0, "w0", "writer", outputs=[ds("db", "orders")])
    one_run(engine, 1, "r1", "reader", inputs=[ds("db", "orders")])  # reads w0's, goes too
    one_run(engine, 2, "w2", "writer", outputs=[ds("db", "orders")])
    one_run(engine, 3, "w3", "writer", outputs=[ds("db", "orders")])
    one_run(engine, 50, "r50", "reader", inputs=[ds("db", "orders")])  # reads w3's version
    one_run(engine, 60, "w60", "writer", outputs=[ds("db", "orders")])
    done = expire(engine, settings)
    assert done["runs"] == 4 and done["versions"] == 2 and done["unlinked_versions"] == 1
    with engine.connect() as conn:
        versions = conn.execute(sa.select(s.dataset_versions.c.run_uuid)).scalars().all()
    assert sorted(str(v) for v in versions) == sorted(["None", rid("w60")])
    nothing_points_at_a_missing_run(engine)


def test_parents_go_after_their_children_and_stay_while_one_is_left(
    engine: sa.Engine, settings: Settings
) -> None:
    for day in (0, 1):
        one_run(engine, day, f"dag{day}", "dag")
        one_run(engine, day, f"task{day}", "dag.task", parent=(f"dag{day}", "dag"))
    one_run(engine, 2, "dag2", "dag")
    one_run(engine, 40, "task40", "dag.task", parent=("dag2", "dag"))  # a young child
    one_run(engine, 50, "dag50", "dag")
    one = prune.Pacer(size=1, smallest=1, largest=1, rest=0)
    pruned = prune.expire(engine, NOW - timedelta(days=90), pacer=one)
    assert pruned.runs == 4 and pruned.batches == 4  # dag0 and dag1 went after task0, task1
    assert runs(engine) == {rid("dag2"), rid("task40"), rid("dag50")}
    nothing_points_at_a_missing_run(engine)


def test_a_run_that_made_a_lake_version_stays(engine: sa.Engine, settings: Settings) -> None:
    one_run(engine, 0, "build0", "nightly")
    one_run(engine, 1, "build1", "nightly")
    one_run(engine, 50, "build50", "nightly")
    lake = Lake(settings, engine)
    with lake.start("raw/users", "SNAPSHOT", run_uuid=rid("build0")) as txn:
        txn.write(pa.table({"id": [1]}))
    done = expire(engine, settings)
    assert done["runs"] == 1 and done["kept_lake_runs"] == 1
    assert runs(engine) == {rid("build0"), rid("build50")}
    assert lake.versions("raw/users")[0].run_uuid == rid("build0")
    nothing_points_at_a_missing_run(engine)


def test_ingest_during_a_pass_loses_nothing(engine: sa.Engine, settings: Settings) -> None:
    for i in range(300):
        one_run(engine, i / 100, f"old{i}", f"job{i % 7}")
    stop, sent, errors = threading.Event(), [], []

    def ingest() -> None:
        n = 0
        while not stop.is_set():
            try:
                one_run(
                    engine,
                    95 + n / 1000,
                    f"new{n}",
                    f"job{n % 7}",
                    parent=(f"old{n}", f"job{n % 7}"),
                )
                sent.append(rid(f"new{n}"))
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)
            n += 1

    thread = threading.Thread(target=ingest)
    thread.start()
    try:
        pacer = prune.Pacer(size=20, smallest=20, largest=20)
        pruned = prune.expire(engine, NOW - timedelta(days=90), pacer=pacer)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:3]
    assert sent and pruned.runs > 0
    assert set(sent) <= runs(engine)  # every run ingested during the pass is there
    with engine.connect() as conn:
        events = conn.execute(
            sa.select(sa.func.count()).where(s.lineage_events.c.run_uuid.in_(sent))
        ).scalar()
    assert events == 2 * len(sent)
    nothing_points_at_a_missing_run(engine)


def test_without_a_limit_every_run_stays(engine: sa.Engine, settings: Settings) -> None:
    one_run(engine, 0, "x0", "kept")
    one_run(engine, 1, "x1", "kept")
    report = LineageRetention(engine, settings).run()
    assert report.days is None and report.pruned.runs == 0 and len(runs(engine)) == 2
    assert LineageRetention(engine, settings).due(NOW) is False


def test_the_cli_deletes_old_runs_with_the_limit_from_strata_toml(
    engine: sa.Engine, settings: Settings, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events from 2024 with 90 days kept: all but each job's newest run go."""
    import json

    from typer.testing import CliRunner

    from strata.cli.main import app

    for day in (0, 1, 2):
        one_run(engine, day, f"cli{day}", "loader")
    where = ["--database-url", settings.database_url, "--lake-uri", settings.lake_uri]
    runner = CliRunner()
    missing = runner.invoke(app, [*where, "retention", "--lineage"])
    assert missing.exit_code == 0 and "[lineage_retention] days = 90" in missing.stdout
    assert "nothing was deleted" in missing.stdout and len(runs(engine)) == 3
    config = tmp_path / "strata.toml"
    config.write_text("[lineage_retention]\ndays = 90\n")
    monkeypatch.setenv("STRATA_CONFIG", str(config))
    dry = runner.invoke(app, [*where, "retention", "--lineage", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.stderr
    assert json.loads(dry.stdout)["runs"] == 2 and len(runs(engine)) == 3
    done = runner.invoke(app, [*where, "retention", "--lineage"])
    assert done.exit_code == 0, done.stderr
    assert "deleted 2 run(s) with 4 event(s), older than 90 days" in " ".join(done.stdout.split())
    assert runs(engine) == {rid("cli2")}


def test_a_pass_killed_between_batches_leaves_a_whole_store(
    engine: sa.Engine, settings: Settings
) -> None:
    """Each batch is one SQL transaction: a pass SIGKILLed mid-way leaves nothing pointing
    at a deleted run, and the next pass finishes."""
    events = []
    for i in range(1500):
        for kind, minute in (("START", i), ("COMPLETE", i + 0.5)):
            events.append(
                run_event(kind, minute, f"k{i}", f"job{i % 5}", outputs=[ds("db", f"t{i % 50}")])
            )
    for start in range(0, len(events), 200):
        record_batch(engine, events[start : start + 200])
    env = dict(
        os.environ,
        STRATA_DATABASE_URL=settings.database_url,
        STRATA_LAKE_URI=settings.lake_uri,
        STRATA_LINEAGE_RETENTION_DAYS="90",
    )
    cli = [sys.executable, "-m", "strata.cli", "retention", "--lineage"]
    proc = subprocess.Popen(cli, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(runs(engine)) == 1500:
        assert proc.poll() is None, "the pass ended before it could be killed"
        assert time.monotonic() < deadline, "the pass deleted nothing in 60 s"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert 5 < len(runs(engine)) < 1500  # killed mid-way
    nothing_points_at_a_missing_run(engine)
    finish = subprocess.run(cli, check=False, env=env, capture_output=True, timeout=300)
    assert finish.returncode == 0, finish.stderr
    assert len(runs(engine)) == 5  # each job's newest run
    nothing_points_at_a_missing_run(engine)
