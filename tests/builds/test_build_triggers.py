"""No trigger is lost: failures that can pass are retried, pipelines that do not load
stop the worker loudly, each worker keeps to its namespace, and a build's own commits
leave no backlog of no-ops."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from build_support import Project, clicks, users

from strata.lake.service import Lake
from strata.store import schema as s

pytestmark = pytest.mark.spark

PENDING = "SELECT count(*) FROM build_triggers WHERE done_at IS NULL"


def _transform_runs(p: Project, state: str = "%") -> int:
    return int(
        p.scalar(
            "SELECT count(*) FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
            "WHERE j.name LIKE 'shop.%' AND j.parent_job_uuid IS NOT NULL "
            "AND r.state LIKE :state",
            state=state,
        )
    )


def test_a_pipeline_that_does_not_load_keeps_its_triggers_until_fixed(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.edit("SLOW_MS = 100\n", "SLOW_MS = 100\nbroken = undefined_name\n")

    code, out, err = p.cli("worker", "--once", "--pipeline", str(p.folder))
    assert code == 1, out + err
    # One line naming the file and line of the fault, and nothing marked done unbuilt.
    assert re.search(r"shop\.py:\d+", err) and "undefined_name" in err, err
    assert "nothing reads it" not in err
    assert p.scalar(PENDING) == 2
    assert p.scalar("SELECT max(attempts) FROM build_triggers") == 1
    assert _transform_runs(p) == 0

    p.edit("broken = undefined_name\n", "")
    report = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert report["pending"] == []
    assert p.scalar(PENDING) == 0
    status = p.json("status", "--pipeline", str(p.folder))
    assert [d["name"] for d in status["datasets"] if d["stale"]] == []


def test_a_failure_that_can_pass_leaves_the_trigger_queued_with_backoff(project: Project) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK")))
    raising = "    raise CommitConflict('another commit won clean/users')\n"
    p.edit("def clean_users(users):\n", "def clean_users(users):\n" + raising)
    p.edit("from strata import", "from strata.errors import CommitConflict\nfrom strata import")

    before = datetime.now(UTC)
    code, out, err = p.cli("worker", "--once", "--pipeline", str(p.folder))
    assert code == 1, out + err
    assert "tried again in 1 s" in err and "stay queued" in err, err
    bt = s.build_triggers
    with p.lake.engine.connect() as conn:
        (attempts, retry_at, error, done) = conn.execute(
            sa.select(bt.c.attempts, bt.c.retry_at, bt.c.error, bt.c.done_at)
        ).one()
    assert (attempts, done) == (1, None)
    assert "another commit won" in error
    assert retry_at > before
    # The run that met the conflict is recorded as it ended.
    assert _transform_runs(p, "FAILED") == 1

    p.edit(raising, "")
    report = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert report["pending"] == []
    first = report["builds"][0]
    assert (first["dataset"], first["state"]) == ("raw/users", "COMPLETED")
    assert p.scalar(PENDING) == 0


def test_a_transform_that_fails_is_recorded_and_its_trigger_done(project: Project) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK")))
    p.edit("def clean_users(users):\n", "def clean_users(users):\n    return 1 / 0\n")
    report = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert report["pending"] == []
    (error,) = p.rows("SELECT error FROM build_triggers WHERE done_at IS NOT NULL")[0]
    assert "ZeroDivisionError" in error


def test_a_worker_takes_only_its_own_namespace_triggers(project: Project) -> None:
    p = project
    other = Lake(dataclasses.replace(p.settings, namespace="elsewhere"))
    with other.transaction("raw/users", type="APPEND") as txn:
        txn.write(users(("ada", "UK")))
    report = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert report["triggers"] == 0
    assert p.scalar(PENDING) == 1  # the other namespace's worker will build it
    other.engine.dispose()


def test_a_builds_own_commits_leave_no_backlog_for_the_worker(project: Project) -> None:
    p = project
    p.append("raw/clicks", clicks(("ada", 40), ("bob", 300)))
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.json("build", "--all", "--pipeline", str(p.folder))
    runs = _transform_runs(p)
    assert runs == 7
    # Only the two raw commits wait; every output's trigger was handled by the build.
    assert p.scalar(PENDING) == 2
    report = p.json("worker", "--once", "--pipeline", str(p.folder))
    assert report["triggers"] == 2
    assert _transform_runs(p) == runs
    assert p.scalar(PENDING) == 0


def test_the_worker_prints_one_line_per_trigger(project: Project) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK")))
    code, _, err = p.cli("worker", "--once", "--pipeline", str(p.folder))
    assert code == 0, err
    assert "trigger raw/users@1: build completed" in err
