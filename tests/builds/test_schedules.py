"""Schedules: declared in strata.toml or beside a transform, checked at start, fired by
the worker; two workers on one store build each firing once."""

from __future__ import annotations

import signal
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from build_support import Project, users

from strata.builds.state import BuildState
from strata.builds.state.schedules import LAPSED
from strata.builds.workers.schedules import Schedule

HOURLY = Schedule("s", "0 * * * *", ("x",))


def _at(text: str) -> datetime:
    return datetime.fromisoformat(f"2026-11-28T{text}+00:00")


@pytest.mark.parametrize(
    ("catch_up", "now", "fired"),
    [
        ("all", "12:10:00", ["10:00:00", "11:00:00", "12:00:00"]),
        ("latest", "12:10:00", ["12:00:00"]),
        ("none", "12:10:00", []),  # missed while no worker ran: not caught up
        ("none", "12:00:30", ["12:00:00"]),
        ("latest", "09:59:59", []),  # nothing due since the last firing
        # Within a second of the next one: the one due before still fires, and exactly
        # on time counts as due.
        ("latest", "11:59:59.500000", ["11:00:00"]),
        ("none", "11:59:59.500000", []),
        ("latest", "12:00:00", ["12:00:00"]),
    ],
)
def test_catch_up_fires_what_it_says(catch_up: str, now: str, fired: list[str]) -> None:
    schedule = Schedule("s", "0 * * * *", ("x",), catch_up=catch_up)
    got = schedule.to_fire(_at("09:30:00"), _at(now))
    assert [d.astimezone(UTC) for d in got] == [_at(t) for t in fired]


def test_a_once_a_second_schedule_fires_the_latest_due_whatever_the_fraction() -> None:
    every_two = Schedule("s", "* * * * * */2", ("x",))
    for now, latest in (("12:00:05.300000", "12:00:04"), ("12:00:04", "12:00:04")):
        assert every_two.latest_due(_at(now)).astimezone(UTC) == _at(latest)
        got = every_two.to_fire(_at("12:00:00"), _at(now))
        assert [d.astimezone(UTC) for d in got] == [_at(latest)]


def test_a_time_zone_moves_the_firing() -> None:
    london = Schedule("s", "0 6 * * *", ("x",), timezone="America/New_York")
    due = london.next_after(_at("00:00:00"))
    assert due.astimezone(UTC) == _at("11:00:00")  # 06:00 in New York, in November


def _when(value: object) -> datetime:
    """A time read back with plain SQL: SQLite gives its text."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "strata.toml"
    path.write_text(body)
    return path


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('cron = "61 * * * *"\nbuild = ["report/*"]', "cron = '61 * * * *' is not a cron"),
        ('cron = "5 * * * *"\nbuild = []', "build = [] must list datasets"),
        (
            'cron = "5 * * * *"\nbuild = ["report/*"]\ntimezone = "Mars/Olympus"',
            "timezone = 'Mars/Olympus' is not a known time zone",
        ),
        ('cron = "5 * * * *"\nbuild = ["nothing/*"]', "build names ['nothing/*'], which no"),
        (
            'cron = "5 * * * *"\nbuild = ["report/*"]\nbranch = "my branch"',
            "branch = invalid branch name 'my branch'",
        ),
    ],
)
def test_bad_schedules_are_one_clear_error_at_start(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, words: str
) -> None:
    p = project
    config = _config(tmp_path, f'[[schedule]]\nname = "h"\n{body}\n')
    monkeypatch.setenv("STRATA_CONFIG", str(config))
    for command in (["schedules"], ["worker", "--once"]):
        code, out, err = p.cli(*command, "--pipeline", str(p.folder))
        assert code == 1, (out, err)
        message = " ".join(err.split())
        assert "schedule 'h' in strata.toml" in message and words in message
        assert "Traceback" not in err


def test_two_workers_fire_each_due_firing_once(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = project
    p.append("raw/users", users(("ada", "UK"), ("bob", "US")))
    p.edit(
        '@transform_df(Output("report/countries"), users=Input("clean/users"))',
        '@transform_df(Output("report/countries"), users=Input("clean/users"), '
        'schedule="0 6 * * *")',
    )
    config = _config(
        tmp_path,
        '[[schedule]]\nname = "often"\ncron = "* * * * * */4"\nbuild = ["report/countries"]\n'
        "force = true\n",
    )
    env = {"STRATA_CONFIG": str(config)}
    workers = [p.spawn("worker", "--poll", "0.05", **env) for _ in range(2)]
    try:
        deadline = time.monotonic() + 300
        done = "SELECT count(*) FROM schedule_firings WHERE ended_at IS NOT NULL"
        while (p.scalar(done) or 0) < 4:
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            assert time.monotonic() < deadline
            time.sleep(0.5)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.communicate(timeout=60)

    # Stopped workers leave no firing running: one they were building when stopped ended
    # ABORTED, and is the latest of its worker's.
    assert p.scalar("SELECT count(*) FROM schedule_firings WHERE ended_at IS NULL") == 0
    firings = p.rows(
        "SELECT due_at, started_at, outcome, run_uuid, holder FROM schedule_firings "
        "WHERE schedule = 'often' ORDER BY due_at"
    )
    completed = [f for f in firings if f[2] == "COMPLETED"]
    stopped = [f for f in firings if f[2] != "COMPLETED"]
    assert len(completed) >= 4 and {f[2] for f in stopped} <= {"ABORTED"}
    for f in stopped:
        assert all(_when(c[0]) < _when(f[0]) for c in completed if c[4] == f[4]), firings
    # Each firing one build, never two: exactly one countries run under each firing's
    # build run (commit triggers build it too, under builds of their own).
    firings = completed
    runs = [str(f[3]) for f in firings]
    assert len(set(runs)) == len(runs)
    for run in runs:
        under = p.scalar(
            "SELECT count(*) FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
            "LEFT JOIN runs pr ON pr.uuid = r.parent_run_uuid "
            "WHERE j.name = 'shop.countries' AND r.state = 'COMPLETED' "
            "AND (r.parent_run_uuid = :u OR pr.parent_run_uuid = :u)",
            u=run,
        )
        assert under == 1, run
    late = sorted((_when(f[1]) - _when(f[0])).total_seconds() for f in firings)
    assert late[0] >= 0 and statistics.median(late) < 5, late

    monkeypatch.setenv("STRATA_CONFIG", str(config))
    found = p.json("schedules", "--pipeline", str(p.folder))["schedules"]
    listed = {s["name"]: s for s in found}
    last = p.rows(
        "SELECT outcome FROM schedule_firings WHERE schedule = 'often' ORDER BY due_at DESC LIMIT 1"
    )[0][0]
    assert listed["often"]["last"]["outcome"] == last
    assert listed["shop.countries"]["build"] == ["report/countries"]
    assert listed["shop.countries"]["cron"] == "0 6 * * *"
    assert listed["shop.countries"]["next_due_at"].endswith("06:00:00+00:00")


SLOW = """
import os
import time

from strata import Input, Output, transform_df


@transform_df(Output("report/slow"), users=Input("raw/users"))
def slow(users):
    if os.path.exists(os.path.join(os.path.dirname(__file__), "slow.flag")):
        time.sleep(15)
    return users
"""


def _stopped_while_running(
    p: Project, proc: subprocess.Popen[str], job: str, sig: int, *, settle: float = 0.0
) -> str:
    """Send ``sig`` to ``proc`` once a run of ``job`` is RUNNING (``settle`` seconds
    later), and wait for it to exit; its stderr."""
    running = (
        "SELECT count(*) FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
        "WHERE j.name = :job AND r.state = 'RUNNING'"
    )
    try:
        deadline = time.monotonic() + 120
        while not p.scalar(running, job=job):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(settle)
    finally:
        proc.send_signal(sig)
        err = _exited(proc, sig)
    return err


def _exited(proc: subprocess.Popen[str], sig: int, *, within: float = 60) -> str:
    """``proc``'s stderr once it exits; a failure with its threads' stacks when it has
    not exited ``within`` seconds of ``sig``."""
    try:
        return proc.communicate(timeout=within)[1]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2)
        proc.kill()
        err = proc.communicate()[1]
        pytest.fail(f"still running {within:g} s after signal {sig}; stderr, stacks last:\n{err}")


def _states(p: Project, job: str) -> list[str]:
    return [
        r[0]
        for r in p.rows(
            "SELECT r.state FROM runs r JOIN jobs j ON j.uuid = r.job_uuid "
            "WHERE j.name = :job ORDER BY r.created_at",
            job=job,
        )
    ]


def test_a_build_stopped_by_sigterm_says_so_in_one_line_and_fails(project: Project) -> None:
    """`strata build` stopped by SIGTERM: its open run ends ABORTED, one line says so,
    and the command fails with 143 (128 + SIGTERM), as a build left unfinished should."""
    p = project
    p.append("raw/users", users(("ada", "UK")))
    (p.folder / "slow.py").write_text(SLOW)
    (p.folder / "slow.flag").write_text("")
    build = p.spawn("build", "report/slow", "--pipeline", str(p.folder))
    err = _stopped_while_running(p, build, "slow.slow", signal.SIGTERM)
    assert build.returncode == 143, err
    assert err.strip().splitlines()[-1] == "build stopped by SIGTERM; runs under way ended ABORTED"
    assert "Traceback" not in err, err
    assert _states(p, "slow.slow") == ["ABORTED"]


# The driver waits in a JVM call while the job runs: where Ctrl-C lands.
SLOW_JOB = """
import time

from pyspark.sql import functions as F

from strata import Input, Output, transform_df


def waited(name):
    time.sleep(30)
    return name


@transform_df(Output("report/slow_job"), users=Input("raw/users"))
def slow_job(users):
    return users.withColumn("user", F.udf(waited, "string")("user"))
"""


def test_a_build_stopped_by_ctrl_c_in_a_spark_job_ends_aborted_not_failed(
    project: Project,
) -> None:
    """Ctrl-C while the transform's Spark job runs: the run ends ABORTED and the build
    says it was stopped (pyspark's own handler turned it into a Py4JError, and the build
    reported the transform failed), exiting 130."""
    p = project
    p.append("raw/users", users(("ada", "UK")))
    (p.folder / "slow_job.py").write_text(SLOW_JOB)
    build = p.spawn("build", "report/slow_job", "--pipeline", str(p.folder))
    # settle: into the write's Spark job, waiting on the UDF
    err = _stopped_while_running(p, build, "slow_job.slow_job", signal.SIGINT, settle=3)
    assert build.returncode == 130, err
    assert err.strip().splitlines()[-1] == "build stopped by Ctrl-C; runs under way ended ABORTED"
    assert "Py4J" not in err and "Traceback" not in err, err
    assert _states(p, "slow_job.slow_job") == ["ABORTED"]


@pytest.mark.spark
def test_a_worker_stopped_mid_firing_ends_it_aborted(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while a firing builds: its run ends ABORTED, and so does the firing (no
    other worker takes a firing already taken, so one left open would read as running
    for good)."""
    p = project
    p.append("raw/users", users(("ada", "UK")))
    (p.folder / "slow.py").write_text(SLOW)
    code, out, err = p.cli("build", "report/slow", "--pipeline", str(p.folder))
    assert code == 0, (out, err)  # all fresh, quickly
    (p.folder / "slow.flag").write_text("")
    config = _config(
        tmp_path,
        '[[schedule]]\nname = "slow"\ncron = "* * * * * */2"\nbuild = ["report/slow"]\n'
        "force = true\n",
    )
    worker = p.spawn("worker", "--poll", "0.05", STRATA_CONFIG=str(config))
    err = _stopped_while_running(p, worker, "slow.slow", signal.SIGTERM)
    # A service asked to stop: it stops cleanly and says so in one line.
    assert worker.returncode == 0, err
    assert err.strip().splitlines()[-1] == (
        "worker stopped by SIGTERM; runs under way ended ABORTED"
    ), err
    assert "Traceback" not in err and "ERROR:root" not in err, err
    [(outcome, ended, error)] = p.rows(
        "SELECT outcome, ended_at, error FROM schedule_firings WHERE schedule = 'slow'"
    )
    assert (outcome, ended is not None) == ("ABORTED", True)
    assert "the worker stopped" in error
    assert _states(p, "slow.slow") == ["COMPLETED", "ABORTED"]
    monkeypatch.setenv("STRATA_CONFIG", str(config))
    found = p.json("schedules", "--pipeline", str(p.folder))["schedules"]
    [slow] = [s for s in found if s["name"] == "slow"]
    assert slow["last"]["outcome"] == "ABORTED" and slow["last"]["ended_at"] is not None


def test_a_held_firing_stays_running_and_a_lapsed_one_ends_aborted(project: Project) -> None:
    """A firing is held while its worker renews the hold; once the hold lapses it reads as
    ABORTED at once, and a worker looking at the branch records it so, sparing the others'
    and other branches' firings."""
    state = BuildState(project.lake.engine, project.lake.namespace)
    due = datetime(2026, 12, 1, 6, tzinfo=UTC)
    assert state.take_firing("main", "kept", due, "worker-a", hold=0.3)
    assert state.take_firing("main", "lost", due, "worker-b", hold=0.3)
    assert state.take_firing("dev", "lost", due, "worker-c", hold=0.3)
    assert not state.take_firing("main", "kept", due, "worker-z", hold=60)  # taken already
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        state.renew_firing("main", "kept", due, "worker-a", hold=0.3)
        state.renew_firing("main", "lost", due, "worker-z", hold=60)  # not its holder: no hold
        time.sleep(0.05)
    [kept] = state.firings("main", "kept")
    [lost] = state.firings("main", "lost")
    assert (kept.outcome, kept.ended_at) == (None, None)
    assert (lost.outcome, lost.error) == ("ABORTED", LAPSED) and lost.ended_at is not None
    # Only read so far: the store still holds it running until a worker records it.
    running = "SELECT schedule, branch FROM schedule_firings WHERE ended_at IS NULL"
    assert sorted(tuple(r) for r in project.rows(running)) == [
        ("kept", "main"),
        ("lost", "dev"),
        ("lost", "main"),
    ]
    assert state.end_lapsed_firings("main") == 1
    assert sorted(tuple(r) for r in project.rows(running)) == [("kept", "main"), ("lost", "dev")]
    [recorded] = state.firings("main", "lost")
    assert (recorded.outcome, recorded.error) == ("ABORTED", LAPSED)
    # Its worker finishing after all records what the build came to.
    state.finish_firing("main", "lost", due, "COMPLETED", None, None)
    assert state.firings("main", "lost")[0].outcome == "COMPLETED"


@pytest.mark.spark
def test_a_firing_whose_worker_was_killed_ends_aborted_when_its_hold_lapses(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL while a firing builds (nothing runs to record it): the firing reads as
    ABORTED once its hold lapses, the next worker records it so and fires the schedule
    again, and that firing's build ends the killed build's run ABORTED."""
    p = project
    p.append("raw/users", users(("ada", "UK")))
    (p.folder / "slow.py").write_text(SLOW)
    code, out, err = p.cli("build", "report/slow", "--pipeline", str(p.folder))
    assert code == 0, (out, err)
    (p.folder / "slow.flag").write_text("")
    config = _config(
        tmp_path,
        '[[schedule]]\nname = "slow"\ncron = "* * * * * */2"\nbuild = ["report/slow"]\n'
        "force = true\n",
    )
    hold = {"STRATA_CONFIG": str(config), "STRATA_BUILD_LEASE_SECONDS": "3"}
    worker = p.spawn("worker", "--poll", "0.05", **hold)
    _stopped_while_running(p, worker, "slow.slow", signal.SIGKILL)
    assert worker.returncode == -signal.SIGKILL
    [(outcome, ended)] = p.rows("SELECT outcome, ended_at FROM schedule_firings")
    assert (outcome, ended) == (None, None)  # nothing recorded it

    monkeypatch.setenv("STRATA_CONFIG", str(config))
    time.sleep(3.5)  # the hold lapses
    found = p.json("schedules", "--pipeline", str(p.folder))["schedules"]
    [slow] = [s for s in found if s["name"] == "slow"]
    assert slow["last"]["outcome"] == "ABORTED" and slow["last"]["error"] == LAPSED

    (p.folder / "slow.flag").unlink()
    again = p.spawn("worker", "--once", **hold)
    _, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    # Its firings since (one, or more when a build outlasts the two seconds between them)
    # completed, and the first of their builds ended the killed one's run.
    firings = p.rows("SELECT outcome, error FROM schedule_firings ORDER BY due_at")
    assert firings[0] == ("ABORTED", LAPSED), firings
    assert len(firings) > 1 and {f[0] for f in firings[1:]} == {"COMPLETED"}, firings
    states = _states(p, "slow.slow")
    assert states[:2] == ["COMPLETED", "ABORTED"] and set(states[2:]) == {"COMPLETED"}, states
    assert len(states) == len(firings) + 1
