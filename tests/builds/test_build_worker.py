"""Commit-triggered builds: `strata worker` processes racing over the trigger queue."""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime
from itertools import pairwise

import pytest
from build_support import Project, clicks, users

pytestmark = pytest.mark.slow  # Spark runs in the workers' own processes


def _runs_by_job(p: Project) -> dict[str, list[tuple[datetime, datetime]]]:
    rows = p.rows(
        "SELECT j.name, r.started_at, r.ended_at FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
        "WHERE j.name LIKE 'shop.%' AND r.state = 'COMPLETED' ORDER BY r.started_at"
    )
    out: dict[str, list[tuple[datetime, datetime]]] = {}
    for name, start, end in rows:
        out.setdefault(name, []).append((start, end))
    return out


def test_two_workers_carry_a_raw_append_through_the_pipeline(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    first = [p.spawn("worker", "--once", "--json") for _ in range(2)]
    results = [w.communicate(timeout=600) for w in first]
    assert all(w.returncode == 0 for w in first), results
    handled = sum(json.loads(out)["triggers"] for out, _ in results)
    assert handled >= 2

    # Both raw commits flowed through the whole pipeline, each transform built once.
    done = p.json("status", "--pipeline", str(p.folder))
    assert not [d["name"] for d in done["datasets"] if d["stale"]]
    built = _runs_by_job(p)
    assert set(built) == {
        "shop.clean_clicks",
        "shop.clean_users",
        "shop.split",
        "shop.slow_per_user",
        "shop.fast_per_user",
        "shop.user_report",
        "shop.countries",
    }
    # No transform ran twice at once (its runs never overlap).
    for spans in built.values():
        for (_, end), (start, _) in pairwise(spans):
            assert end <= start
    assert p.scalar("SELECT count(*) FROM build_triggers WHERE done_at IS NULL") == 0

    # A late append flows through again on its own.
    p.append("raw/clicks", clicks(("bob", 500)))
    again = p.spawn("worker", "--once", "--json")
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    hist = p.json("history", "report/users")["versions"]
    assert hist[-1]["inputs"] == {"metrics/fast_per_user": 1, "metrics/slow_per_user": 2}


def test_a_killed_worker_leaves_its_trigger_to_another(project: Project) -> None:
    p = project
    p.edit(
        "def clean_clicks(clicks):\n",
        "def clean_clicks(clicks):\n    import time; time.sleep(60)\n",
    )
    p.append("raw/clicks", clicks(("ada", 40)))
    victim = p.spawn("worker", STRATA_BUILD_LEASE_SECONDS="3")
    deadline = time.monotonic() + 120
    running = "SELECT uuid FROM runs WHERE state = 'RUNNING' AND parent_run_uuid IS NOT NULL"
    while not p.rows(running):  # the transform's own run has started
        assert time.monotonic() < deadline, victim.stderr.read() if victim.stderr else ""
        time.sleep(0.2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert p.scalar("SELECT count(*) FROM build_triggers WHERE done_at IS NULL") == 1
    (orphan,) = p.rows(running)

    p.edit("    import time; time.sleep(60)\n", "")
    time.sleep(3.5)  # the dead worker's leases run out
    rescuer = p.spawn("worker", "--once", "--json", STRATA_BUILD_LEASE_SECONDS="3")
    out, err = rescuer.communicate(timeout=600)
    assert rescuer.returncode == 0, err
    assert json.loads(out)["triggers"] >= 1
    assert p.scalar("SELECT count(*) FROM build_triggers WHERE done_at IS NULL") == 0
    hist = p.json("history", "clean/clicks")["versions"]
    assert [v["inputs"] for v in hist] == [{"raw/clicks": 1}]
    # The dead worker's runs ended ABORTED, with the reason, the parent build run too.
    assert p.scalar("SELECT count(*) FROM runs WHERE state = 'RUNNING'") == 0
    state, error = p.rows("SELECT state, error FROM runs WHERE uuid = :u", u=orphan[0])[0]
    assert state == "ABORTED"
    assert "lease expired" in str(error)
    parent_state = p.scalar(
        "SELECT p.state FROM runs c JOIN runs p ON p.uuid = c.parent_run_uuid WHERE c.uuid = :u",
        u=orphan[0],
    )
    assert parent_state == "ABORTED"


def test_two_workers_racing_over_quick_appends_build_each_input_once(project: Project) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    workers = [p.spawn("worker", "--poll", "0.05") for _ in range(2)]
    try:
        for i in range(10):
            p.append("raw/clicks", clicks(("ada", 40 + i), ("bob", 300 + i)))
        deadline = time.monotonic() + 600
        while p.scalar("SELECT count(*) FROM build_triggers WHERE done_at IS NULL"):
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            assert time.monotonic() < deadline
            time.sleep(0.5)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.communicate(timeout=60)

    # From the store: no transform ran twice on the same input versions, and none of its
    # runs overlapped.
    runs = p.rows(
        "SELECT j.name, r.uuid, r.started_at, r.ended_at FROM runs r "
        "JOIN jobs j ON j.uuid = r.job_uuid "
        "WHERE j.parent_job_uuid IS NOT NULL AND r.state = 'COMPLETED' ORDER BY r.started_at"
    )
    inputs: dict[str, set[frozenset[str]]] = {}
    spans: dict[str, list[tuple[datetime, datetime]]] = {}
    for job, run, start, end in runs:
        read = frozenset(
            str(v)
            for (v,) in p.rows(
                "SELECT dataset_version_uuid FROM run_inputs WHERE run_uuid = :r", r=run
            )
        )
        assert read not in inputs.setdefault(job, set()), f"{job} ran twice on {sorted(read)}"
        inputs[job].add(read)
        spans.setdefault(job, []).append((start, end))
    for job, seq in spans.items():
        for (_, end), (start, _) in pairwise(seq):
            assert end <= start, job
    assert not p.scalar("SELECT count(*) FROM runs WHERE state = 'RUNNING'")
    done = p.json("status", "--pipeline", str(p.folder))
    assert [d["name"] for d in done["datasets"] if d["stale"]] == []
    assert p.json("history", "clean/clicks")["versions"][-1]["inputs"] == {"raw/clicks": 10}
