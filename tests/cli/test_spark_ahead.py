"""`strata build` starts Spark's JVM while it loads its pipelines, and stops it when no
transform needed it.

Each build runs the installed `strata` in a process of its own, as a user does: only
the command's own process starts a JVM ahead.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

from console import run_strata
from strata.lake import spark_ahead
from strata.lake.service import connect
from strata.settings import Settings

# The pipeline module notes, as it is loaded, the command lines of the command's own
# child processes: a JVM started ahead is one of them by then.
PIPELINE = """
import os
from pathlib import Path

from strata import Input, Output, transform_df


def _children():
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                found.append((entry / "cmdline").read_bytes().replace(b"\\0", b" ").decode())
        except (OSError, ValueError):
            continue
    return found


Path(os.environ["CHILDREN_NOTE"]).write_text("\\n".join(_children()))


@transform_df(Output("clean/n"), n=Input("raw/n"))
def clean(n):
    return n.filter(n.n > 0)
"""


def strata(tmp: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The command on ``tmp``'s project, its pipeline's note in ``tmp/children``."""
    return run_strata(
        tmp / "home",
        *args,
        "--pipeline",
        str(tmp / "pipelines"),
        "--json",
        CHILDREN_NOTE=str(tmp / "children"),
        **env,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "clean.py").write_text(PIPELINE)
    lake = connect(Settings(home=tmp_path / "home"))
    with lake.transaction("raw/n", type="APPEND") as txn:
        txn.write(pa.table({"n": [1, -2, 3]}))
    lake.engine.dispose()
    return tmp_path


def jvms_of(home: Path) -> list[str]:
    """Command lines of running JVMs started for ``home`` (its log4j2 file is on them)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(home.resolve() / "logs") in line and "java" in line:
            found.append(line)
    return found


def gone(home: Path, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while jvms_of(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not jvms_of(home)


def connection_folders(home: Path) -> list[Path]:
    return list((home / "logs").glob("gateway-*"))


def starts(home: Path) -> int:
    """How many Spark starts the log records."""
    log = home / "logs" / "spark.log"
    return log.read_text().count("\n=== ") if log.exists() else 0


def test_a_build_starts_the_jvm_while_it_loads_its_pipelines(project: Path) -> None:
    home = project / "home"
    done = strata(project, "build", "clean/n")
    assert done.returncode == 0, done.stderr
    (step,) = json.loads(done.stdout)["transforms"]
    assert step["outcome"] == "built"
    assert "org.apache.spark.deploy.SparkSubmit" in (project / "children").read_text()
    assert sorted(connect(Settings(home=home)).read_arrow("clean/n").column("n").to_pylist()) == [
        1,
        3,
    ]
    assert starts(home) == 1
    assert gone(home)
    assert connection_folders(project / "home") == []


def test_a_build_with_nothing_to_run_stops_the_jvm_it_started(project: Path) -> None:
    home = project / "home"
    assert strata(project, "build", "clean/n").returncode == 0
    assert gone(home)
    again = strata(project, "build", "clean/n")
    assert again.returncode == 0, again.stderr
    (step,) = json.loads(again.stdout)["transforms"]
    assert step["outcome"] == "fresh"
    assert "org.apache.spark.deploy.SparkSubmit" in (project / "children").read_text()
    assert starts(home) == 2
    # Stopped as the command ended, however far its start had come: nothing left
    # running, no connection folder left behind.
    assert gone(home, within=2.0)
    assert connection_folders(project / "home") == []


def test_a_dry_run_starts_no_jvm(project: Path) -> None:
    done = strata(project, "build", "clean/n", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "SparkSubmit" not in (project / "children").read_text()
    assert starts(project / "home") == 0


def test_a_verbose_build_starts_its_jvm_when_asked_with_its_output_on_the_terminal(
    project: Path,
) -> None:
    done = strata(project, "--verbose", "build", "clean/n")
    assert done.returncode == 0, done.stderr
    assert "SparkSubmit" not in (project / "children").read_text()
    assert "Using Spark's default log4j profile" in done.stderr
    assert starts(project / "home") == 0


def test_a_jvm_that_does_not_start_is_one_error_naming_the_log(project: Path) -> None:
    home = project / "home"
    done = strata(project, "build", "clean/n", JAVA_HOME="/no/such/java")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: Spark did not start: ")
    assert "/no/such/java/bin/java" in error
    assert f"the whole log is {home.resolve() / 'logs' / 'spark.log'}" in error
    assert connection_folders(project / "home") == []


def test_a_jvm_started_with_other_options_is_stopped_not_taken(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    stale, fresh = tmp_path / "gateway-killed", tmp_path / "gateway-starting"
    for folder in (stale, fresh):
        folder.mkdir()
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    options = {"spark.master": "local[1]", "spark.app.name": "ahead-test"}
    assert spark_ahead.start(options, log)
    # A folder a killed command left an hour ago goes; one of a start under way stays.
    assert not stale.exists() and fresh.exists()
    pending = spark_ahead._pending
    assert pending is not None and pending.folder.parent == tmp_path
    assert not spark_ahead.start(options, log)  # one at a time
    assert spark_ahead.take({**options, "spark.driver.memory": "1g"}) is None
    assert pending.proc.wait(timeout=30) != 0  # stopped, not exited of itself
    assert not pending.folder.exists()
    assert spark_ahead.take(options) is None  # nothing pending any more
